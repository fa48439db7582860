package operator

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// The cache holds no more of the cluster than the operator reads: namespaced
// kinds in its namespace, Prometheus' account elsewhere, managed cluster-scoped
// objects only.
func TestCacheByObject(t *testing.T) {
	byObject := cacheByObject("kubevirt")
	find := func(match func(any) bool) cache.ByObject {
		for obj, cfg := range byObject {
			if match(obj) {
				return cfg
			}
		}
		t.Fatal("no cache configuration")
		return cache.ByObject{}
	}
	secrets := find(func(o any) bool { _, ok := o.(*corev1.Secret); return ok })
	if _, ok := secrets.Namespaces["kubevirt"]; !ok || len(secrets.Namespaces) != 1 {
		t.Errorf("Secrets cached in %v, want the operator's namespace only", secrets.Namespaces)
	}
	accounts := find(func(o any) bool { _, ok := o.(*corev1.ServiceAccount); return ok })
	elsewhere, ok := accounts.Namespaces[cache.AllNamespaces]
	if !ok || elsewhere.FieldSelector == nil || !elsewhere.FieldSelector.Matches(fields.Set{"metadata.name": "prometheus-k8s"}) ||
		elsewhere.FieldSelector.Matches(fields.Set{"metadata.name": "builder"}) {
		t.Errorf("ServiceAccounts outside the operator's namespace: %+v, want only prometheus-k8s", elsewhere)
	}
	roles := find(func(o any) bool { _, ok := o.(*rbacv1.ClusterRole); return ok })
	if roles.Label == nil || !roles.Label.Matches(labels.Set{metadata.ManagedByLabel: metadata.ManagedByValue}) || roles.Label.Matches(labels.Set{}) {
		t.Errorf("ClusterRoles cached with selector %v, want the managed ones", roles.Label)
	}
}

// Roles and RoleBindings are cached in every namespace where they are the
// operator's (kube-system's RoleBinding is read on every pass of a rollout),
// and wholly in its own.
func TestCacheByObjectRBACEverywhere(t *testing.T) {
	for obj, cfg := range cacheByObject("kubevirt") {
		switch obj.(type) {
		case *rbacv1.Role, *rbacv1.RoleBinding:
		default:
			continue
		}
		own, ok := cfg.Namespaces["kubevirt"]
		elsewhere, ok2 := cfg.Namespaces[cache.AllNamespaces]
		if !ok || own.LabelSelector != nil || !ok2 || elsewhere.LabelSelector == nil ||
			!elsewhere.LabelSelector.Matches(labels.Set{metadata.ManagedByLabel: metadata.ManagedByValue}) || elsewhere.LabelSelector.Matches(labels.Set{}) {
			t.Errorf("%T cached as %+v, want all of the operator's namespace and the managed ones elsewhere", obj, cfg.Namespaces)
		}
	}
}
