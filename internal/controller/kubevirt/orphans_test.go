package kubevirt

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

func TestManagedScope(t *testing.T) {
	s := &strategy.Strategy{}
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "a"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-monitoring", Name: "b"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "c"}},
	} {
		if err := s.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &deployid.Config{Namespace: "kubevirt"}
	got := apply.ScopeOf("kubevirt", []*deployid.Config{cfg, nil}, s)
	if want := []string{"monitoring", "openshift-monitoring"}; got.Namespace != "kubevirt" || !slices.Equal(got.Others, want) {
		t.Fatalf("scope %+v, want kubevirt and %v", got, want)
	}
	if got := apply.ScopeOf("kubevirt", nil, s); !slices.Equal(got.Others, []string{"openshift-monitoring"}) {
		t.Fatalf("without a config: scope %+v, want kubevirt and the strategy's namespaces", got)
	}
}

// Monitoring went away: the regenerated strategy (same ID) has no monitoring
// objects, and the Role the old one wrote in the monitoring namespace goes.
func TestOrphansInTheOldMonitoringNamespaceGo(t *testing.T) {
	scheme := testScheme(t)
	managed := map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}
	stale := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "kubevirt-prometheus-metrics", Labels: managed}}
	kept := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt-handler", Labels: managed}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stale, kept).Build()
	r := &Reconciler{Client: c, APIReader: c, Namespace: "kubevirt"}
	desired := &strategy.Strategy{}
	if err := desired.Add(kept.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	s := &scope{kv: &v1.KubeVirt{}, cfg: &deployid.Config{Namespace: "kubevirt"}, target: &deployment{desired: desired}}
	if err := r.deleteOrphans(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(stale), &rbacv1.Role{}); client.IgnoreNotFound(err) != nil || err == nil {
		t.Fatalf("the monitoring Role is still there (%v)", err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(kept), &corev1.ServiceAccount{}); err != nil {
		t.Fatalf("a desired object was deleted: %v", err)
	}
	if len(s.Events) != 1 || s.Events[0].Reason != "DeletedObsoleteObjects" {
		t.Fatalf("events %+v, want one DeletedObsoleteObjects", s.Events)
	}
}
