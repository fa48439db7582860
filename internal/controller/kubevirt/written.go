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
	replaced map[string]bool
	status   *v1.KubeVirtStatus
}

// remember records a status written over the CR at the given resourceVersions.
func (w *writtenStatus) remember(kv *v1.KubeVirt, replaced ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.uid, w.status = string(kv.UID), kv.Status.DeepCopy()
	w.replaced = map[string]bool{}
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
