package workloadupdate

import (
	"encoding/json"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

// Placement is what of a VMI's spec decides where it may run: the fields the
// target check reads, the only ones of the spec the operator's cache keeps.
type Placement struct {
	NodeSelector map[string]string   `json:"nodeSelector,omitempty"`
	Affinity     *corev1.Affinity    `json:"affinity,omitempty"`
	Tolerations  []corev1.Toleration `json:"tolerations,omitempty"`
}

// PlacementOf reads a VMI spec's placement; a spec that cannot be read is an
// error naming why.
func PlacementOf(spec runtime.RawExtension) (Placement, error) {
	var p Placement
	if len(spec.Raw) == 0 { // read from the API, a spec is always raw JSON
		return p, nil
	}
	err := json.Unmarshal(spec.Raw, &p)
	return p, err
}

func placementOrNone(p *Placement) Placement {
	if p == nil {
		return Placement{}
	}
	return *p
}

// Targets answers whether a VMI could be live-migrated to another node: a node
// that is Ready, not cordoned, not being deleted and not marked unschedulable by
// virt-handler (kubevirt.io/schedulable=false; an absent label is not held
// against a node: the operator does not second-guess the scheduler), that matches the VMI's node selector and required node affinity,
// and whose NoSchedule and NoExecute taints the VMI tolerates. A migration that
// no node can take would only fail, back off and end as "needs attention".
type Targets struct {
	usable []*corev1.Node
}

// NewTargets keeps the nodes a migration could land on.
func NewTargets(nodes []corev1.Node) *Targets {
	t := &Targets{}
	for i := range nodes {
		if n := &nodes[i]; usable(n) {
			t.usable = append(t.usable, n)
		}
	}
	return t
}

// usable: a migration may land on the node (see Targets).
func usable(n *corev1.Node) bool {
	return n.DeletionTimestamp == nil && !n.Spec.Unschedulable && n.Labels[metadata.SchedulableLabel] != "false" && metadata.NodeIsReady(n)
}

// Why is "" when some node other than the VMI's own could take it, else why
// none can. A nil Targets checks nothing (upstream's updater does not). A
// VMI without a placement (none set, or a spec that cannot be read: the
// migration itself will say what is wrong with it) fits any usable node.
func (t *Targets) Why(vmi *v1.VirtualMachineInstance) string {
	if t == nil {
		return ""
	}
	return t.why(CompactVMI(vmi))
}

// why is Why for the compact form.
func (t *Targets) why(vmi *VMI) string {
	if t == nil {
		return ""
	}
	if vmi.Has(SpecUnreadable) {
		return ""
	}
	p := placementOrNone(vmi.Placement)
	others := 0
	affinity := nodeaffinity.NewRequiredNodeAffinity(p.NodeSelector, p.Affinity)
	matching := 0
	for _, n := range t.usable {
		if n.Name == vmi.Node {
			continue
		}
		others++
		matches, tolerated := fits(p, affinity, n)
		if matches {
			matching++
		}
		if matches && tolerated {
			return ""
		}
	}
	switch {
	case others == 0:
		return "no other schedulable node"
	case matching == 0:
		return "no other schedulable node matches its node selector and affinity"
	}
	return "every other schedulable node matching it has a taint it does not tolerate"
}

// fits: whether n matches the placement's node selector and required
// affinity, and whether the placement tolerates n's scheduling taints.
func fits(p Placement, affinity nodeaffinity.RequiredNodeAffinity, n *corev1.Node) (matches, tolerated bool) {
	if ok, err := affinity.Match(n); err != nil || !ok {
		return false, false
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), n.Spec.Taints, p.Tolerations, scheduling, false)
	return true, !untolerated
}

// scheduling keeps the taints that keep a new pod off a node.
func scheduling(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}
