package kubevirt

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// scopedReader reads from the cache what the cache holds (cluster-scoped
// objects and the operator's namespace) and from the API server the few
// objects elsewhere (the monitoring namespace's ServiceMonitor and Role).
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
	if key.Namespace == "" || key.Namespace == s.namespace {
		return s.cached.Get(ctx, key, obj, opts...)
	}
	return s.live.Get(ctx, key, obj, opts...)
}

func (s scopedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if lo.Namespace == s.namespace {
		return s.cached.List(ctx, list, opts...)
	}
	return s.live.List(ctx, list, opts...)
}
