package workloadupdate

import (
	"fmt"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// notices remembers which once-per-state Events were sent, so a state that
// lasts (a VMI needing attention, a bad choice value) is announced once, and
// again only when it changes.
type notices struct {
	mu   sync.Mutex
	sent map[string]bool
}

func newNotices() *notices { return &notices{sent: map[string]bool{}} }

// fresh returns the keys not sent yet, marks them sent, and forgets sent keys
// no longer current (so a state that comes back is announced again).
func (n *notices) fresh(current []string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := make(map[string]bool, len(current))
	var out []string
	for _, k := range current {
		now[k] = true
		if !n.sent[k] {
			out = append(out, k)
		}
	}
	n.sent = now
	return out
}

// announce sends a Warning for each VMI newly needing attention, newly not
// movable, and each new invalid choice.
func (r *Reconciler) announce(p core.Plan, evict bool) {
	type notice struct {
		vmi          core.Key
		reason, note string
	}
	byKey := map[string]notice{}
	var keys []string
	for _, a := range p.NeedsAttention {
		k := fmt.Sprintf("attention/%s/%d", a.Key, a.Failures)
		byKey[k] = notice{a.Key, core.ReasonNeedsAttention, core.MessageNeedsAttention(a.Failures, evict)}
		keys = append(keys, k)
	}
	for _, u := range p.NotMovable {
		k := "notmovable/" + u.Key.String() + "/" + u.Reason
		byKey[k] = notice{u.Key, core.ReasonNotMovable, core.MessageNotMovable(u.Reason)}
		keys = append(keys, k)
	}
	for vmi, raw := range p.InvalidChoices {
		k := "choice/" + vmi.String() + "/" + strconv.Quote(raw)
		byKey[k] = notice{vmi, core.ReasonInvalidChoice, core.MessageInvalidChoice(raw)}
		keys = append(keys, k)
	}
	for _, k := range r.notices.fresh(keys) {
		n := byKey[k]
		obj := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: n.vmi.Namespace, Name: n.vmi.Name}}
		r.warn(obj, n.reason, "WorkloadUpdate", n.note)
	}
}
