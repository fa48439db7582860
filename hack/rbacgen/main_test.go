package main

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/strategy"
)

func strategyOf(t *testing.T, objs ...client.Object) *strategy.Strategy {
	t.Helper()
	s := &strategy.Strategy{}
	for _, o := range objs {
		if err := s.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// Roles defined are escalated, roles referenced bound (a ClusterRole in a
// RoleBinding cluster-wide), and a write outside the install namespace gets its
// own namespaced marker.
func TestRefsAndMarkers(t *testing.T) {
	r := newRefs()
	s := strategyOf(t,
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt-controller"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt-handler", Namespace: installNamespace}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "system:auth-delegator"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: "kube-system"},
			RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "extension-apiserver-authentication-reader"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "view", Namespace: installNamespace},
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}},
	)
	if err := r.add("v1.9.0", s); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := write(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`resources=clusterroles,verbs=escalate,resourceNames={"kubevirt-controller"}`,
		`resources=clusterroles,verbs=bind,resourceNames={"system:auth-delegator","view"}`,
		`namespace=kubevirt,resources=roles,verbs=escalate,resourceNames={"kubevirt-handler"}`,
		`namespace=kube-system,resources=roles,verbs=bind,resourceNames={"extension-apiserver-authentication-reader"}`,
		`groups=rbac.authorization.k8s.io,namespace=kube-system,resources=rolebindings,verbs=list;create;patch;delete`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("markers lack %s:\n%s", want, b.String())
		}
	}
}

// RBAC in the monitoring namespace cannot be named by a static Role: refused.
func TestRBACInTheMonitoringNamespaceIsRefused(t *testing.T) {
	r := newRefs()
	s := strategyOf(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "prometheus", Namespace: monitorNamespace}})
	if err := r.add("v1.9.0", s); err == nil || !strings.Contains(err.Error(), "monitoring namespace") {
		t.Fatalf("got %v, want a refusal naming the monitoring namespace", err)
	}
}

// The releases render, and their markers name virt-handler's roles.
func TestCollect(t *testing.T) {
	r, err := collect()
	if err != nil {
		t.Fatal(err)
	}
	if !r.escalate[""]["kubevirt-handler"] || !r.bind[installNamespace]["kubevirt-handler"] {
		t.Fatalf("collected %+v", r)
	}
}

// The kinds whose stored version a move between the releases retires get
// update (v1.9.0 stores exports as v1, which v1.8.4 does not serve); a version
// only served, never the storage version, needs none (v1.9.0's templates).
func TestRewrittenKinds(t *testing.T) {
	r, err := collect()
	if err != nil {
		t.Fatal(err)
	}
	got := r.rewritten()
	if !got["export.kubevirt.io"]["virtualmachineexports"] || got["template.kubevirt.io"]["virtualmachinetemplates"] {
		t.Fatalf("rewritten %v: want the exports, not the templates", got)
	}
}
