package kubevirt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

// The helpers every phase of the package shares: the readers, writes, node
// readiness. Phase files use these and their own, never each other's.

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

// write carries out a phase's writes, kind by kind, and records their
// generations (and those of the objects found to be its own last writes).
func (r *Reconciler) write(ctx context.Context, s *scope, actions []apply.Action) error {
	s.wrote(apply.Recorded(actions))
	writes := apply.Writes(actions)
	if len(writes) == 0 {
		return nil
	}
	countDrift(s, writes)
	log.FromContext(ctx).Info("applying", "writes", len(writes), "first", describe(writes[0]))
	gens, err := (&apply.Applier{Client: r.Client}).ApplyByKind(ctx, writes, writeWorkers)
	s.wrote(gens)
	return err
}

// observedConfig is the observed deployment's config as the status records
// it; nil when there is none or it cannot be read.
func observedConfig(kv *v1.KubeVirt) *deployid.Config {
	cfg, err := deployid.Parse(kv.Status.ObservedDeploymentConfig)
	if err != nil || kv.Status.ObservedDeploymentConfig == "" {
		return nil
	}
	return cfg
}

func describe(a apply.Action) string {
	return fmt.Sprintf("%s %s (%s)", a.Op, apply.RefOf(a.Object), a.Reason)
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

func anyRef(objs []client.Object, refs map[apply.ObjectRef]bool) bool {
	for _, o := range objs {
		if refs[apply.RefOf(o)] {
			return true
		}
	}
	return false
}

// APIReaderOrClient is the uncached reader when there is one.
func (r *Reconciler) APIReaderOrClient() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// nodeReadiness is every node by name, true when its Ready condition is True.
func (r *Reconciler) nodeReadiness(ctx context.Context) (map[string]bool, error) {
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	out := make(map[string]bool, len(nodes.Items))
	for i := range nodes.Items {
		out[nodes.Items[i].Name] = metadata.NodeIsReady(&nodes.Items[i])
	}
	return out, nil
}

// errorSummary is err as Degraded says it: what failed, named by the
// operator's own words, and the kind of failure the API server gave, without
// its raw text (generated names, resource versions), which the log and the
// Warning Event carry (errorDetail).
func errorSummary(err error) string {
	full := err.Error()
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		st := status.Status()
		what := strings.TrimSuffix(strings.TrimSuffix(full, st.Message), ": ")
		reason := string(st.Reason)
		if reason == "" {
			reason = fmt.Sprintf("HTTP %d", st.Code)
		}
		if what == "" || what == full {
			return "the API server refused it (" + reason + ")"
		}
		return what + ": the API server refused it (" + reason + ")"
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return "the API server could not be reached"
	}
	return full
}

// errorDetail is err in full, for the Warning Event and the log, when
// errorSummary left something out; "" otherwise.
func errorDetail(err error) string {
	if full := err.Error(); full != errorSummary(err) {
		return full
	}
	return ""
}
