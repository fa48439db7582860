package kubevirt

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// countingReader counts the reads it serves.
type countingReader struct{ gets, lists int }

func (c *countingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	c.gets++
	return nil
}

func (c *countingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	c.lists++
	return nil
}

// What the cache holds is read from it: the operator's namespace, the
// cluster-scoped kinds, and the Roles and RoleBindings of every namespace
// (a RoleBinding in kube-system was a GET of the API server on every pass);
// anything else elsewhere is read live.
func TestScopedReaderReadsCachedKindsFromTheCache(t *testing.T) {
	for _, c := range []struct {
		name   string
		key    client.ObjectKey
		obj    client.Object
		cached bool
	}{
		{"a Secret of the operator's namespace", client.ObjectKey{Namespace: "kubevirt", Name: "s"}, &corev1.Secret{}, true},
		{"a cluster-scoped object", client.ObjectKey{Name: "n"}, &corev1.Namespace{}, true},
		{"a RoleBinding in kube-system", client.ObjectKey{Namespace: "kube-system", Name: "rb"}, &rbacv1.RoleBinding{}, true},
		{"a Role in the monitoring namespace", client.ObjectKey{Namespace: "monitoring", Name: "r"}, &rbacv1.Role{}, true},
		{"a ServiceAccount elsewhere", client.ObjectKey{Namespace: "monitoring", Name: "sa"}, &corev1.ServiceAccount{}, false},
	} {
		cached, live := &countingReader{}, &countingReader{}
		r := scopedReader{cached: cached, live: live, namespace: "kubevirt"}
		_ = r.Get(context.Background(), c.key, c.obj)
		if (cached.gets == 1) != c.cached || (live.gets == 1) == c.cached {
			t.Errorf("%s: %d cached and %d live reads, want it read from the cache: %v", c.name, cached.gets, live.gets, c.cached)
		}
	}
	cached, live := &countingReader{}, &countingReader{}
	r := scopedReader{cached: cached, live: live, namespace: "kubevirt"}
	_ = r.List(context.Background(), &rbacv1.RoleBindingList{}, client.InNamespace("kube-system"))
	_ = r.List(context.Background(), &corev1.ServiceAccountList{}, client.InNamespace("monitoring"))
	if cached.lists != 1 || live.lists != 1 {
		t.Errorf("lists: %d cached, %d live; want the RoleBindings from the cache, the ServiceAccounts live", cached.lists, live.lists)
	}
}
