package certificates

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Wanted is what the KubeVirt controller needs certificates for: the
// certificate Secret and CA ConfigMap shells of every deployment involved
// (the target's and, while it differs, the observed one's), stamped as their
// deployment writes them.
type Wanted struct {
	Secrets    []*corev1.Secret
	ConfigMaps []*corev1.ConfigMap
}

// Wants is where the KubeVirt controller tells the certificate controller
// what it needs, and learns whether that is served. It lives in process
// memory on purpose: after a restart the certificate controller keeps valid
// every certificate that exists until the KubeVirt controller's first pass
// says again what else is wanted; nothing is lost in between.
type Wants struct {
	mu      sync.Mutex
	kv      types.NamespacedName
	wanted  Wanted
	version uint64 // counts the changes of wanted
	served  uint64 // the version the certificate controller last kept valid
	changes chan event.TypedGenericEvent[*v1.KubeVirt]
}

// NewWants is an empty registry.
func NewWants() *Wants {
	return &Wants{changes: make(chan event.TypedGenericEvent[*v1.KubeVirt], 1)}
}

// Set records what the KubeVirt CR kv needs and reports whether the
// certificate controller has served it already (false asks the caller to
// wait: a component's certificates exist before it is written). A change
// wakes the certificate controller.
func (w *Wants) Set(kv *v1.KubeVirt, wanted Wanted) (served bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := types.NamespacedName{Namespace: kv.Namespace, Name: kv.Name}
	if key == w.kv && equality.Semantic.DeepEqual(wanted, w.wanted) {
		return w.served == w.version
	}
	w.kv, w.wanted = key, wanted
	w.version++
	select {
	case w.changes <- event.TypedGenericEvent[*v1.KubeVirt]{Object: &v1.KubeVirt{ObjectMeta: kv.ObjectMeta}}:
	default: // a wake-up is pending already
	}
	return false
}

// snapshot is what is wanted for kv now, and its version.
func (w *Wants) snapshot(kv types.NamespacedName) (Wanted, uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if kv != w.kv {
		return Wanted{}, w.version
	}
	return w.wanted, w.version
}

// markServed records that version was kept valid.
func (w *Wants) markServed(version uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if version > w.served {
		w.served = version
	}
}

// source is the watch that wakes the certificate controller on a change.
func (w *Wants) source() source.Source {
	return source.Channel(w.changes, handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, kv *v1.KubeVirt) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: kv.Namespace, Name: kv.Name}}}
	}))
}
