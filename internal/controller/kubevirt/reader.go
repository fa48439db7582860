package kubevirt

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// scopedReader reads from the cache what the cache holds (cluster-scoped
// objects, the operator's namespace, and the managed Roles and RoleBindings
// of every namespace) and from the API server the few objects elsewhere (the
// monitoring namespace's ServiceMonitor).
type scopedReader struct {
	cached, live client.Reader
	namespace    string
}

func (r *Reconciler) reader() client.Reader {
	if r.APIReader == nil {
		return r.Client
	}
	return scopedReader{cached: r.Client, live: r.APIReader, namespace: r.Namespace}
}

func (s scopedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key.Namespace == "" || key.Namespace == s.namespace || cachedEverywhere(obj) {
		return s.cached.Get(ctx, key, obj, opts...)
	}
	return s.live.Get(ctx, key, obj, opts...)
}

func (s scopedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if lo.Namespace == s.namespace || cachedEverywhere(list) {
		return s.cached.List(ctx, list, opts...)
	}
	return s.live.List(ctx, list, opts...)
}

// cachedEverywhere: the cache holds the managed objects of this kind in every
// namespace (package operator's cacheByObject): a Role or RoleBinding the
// cache lacks there is none of the operator's, and its first write takes it
// over.
func cachedEverywhere(obj runtime.Object) bool {
	switch obj.(type) {
	case *rbacv1.Role, *rbacv1.RoleBinding, *rbacv1.RoleList, *rbacv1.RoleBindingList:
		return true
	}
	return false
}
