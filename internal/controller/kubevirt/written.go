package kubevirt

import (
	"sync"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// writtenStatus remembers the last status this process wrote and the
// resourceVersions that write replaced. The informer may deliver the next event
// before it delivers that write: a reconcile reading the CR at a replaced
// version would act on a status without its own last decisions (an upgrade's
// target announced twice, objects it just applied taken for edits out of band).
type writtenStatus struct {
	mu       sync.Mutex
	uid      string
	version  string // the written resourceVersion
	replaced map[string]bool
	status   *v1.KubeVirtStatus
}

// maxReplaced bounds the versions remembered: the cache moves only forward,
// so a version that many writes old will not be read again.
const maxReplaced = 32

// remember records a status written over the CR at the given resourceVersions.
func (w *writtenStatus) remember(kv *v1.KubeVirt, replaced ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	// A write made from a refreshed read replaces the earlier write too, and
	// every version that one replaced: the cache may still deliver them.
	var previous map[string]bool
	if w.uid == string(kv.UID) {
		replaced = append(replaced, w.version)
		if len(w.replaced) < maxReplaced {
			previous = w.replaced
		}
	}
	w.uid, w.version, w.status = string(kv.UID), kv.ResourceVersion, kv.Status.DeepCopy()
	w.replaced = map[string]bool{}
	for rv := range previous {
		w.replaced[rv] = true
	}
	for _, rv := range replaced {
		if rv != "" && rv != kv.ResourceVersion {
			w.replaced[rv] = true
		}
	}
}

// refresh gives kv the remembered status when kv is a version that write
// replaced; a newer version (ours or anyone's) is taken as it is.
func (w *writtenStatus) refresh(kv *v1.KubeVirt) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == nil || string(kv.UID) != w.uid || !w.replaced[kv.ResourceVersion] {
		return false
	}
	kv.Status = *w.status.DeepCopy()
	return true
}
