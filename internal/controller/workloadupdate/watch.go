package workloadupdate

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// vmiEventWindow gathers VMI events into one plan: starting a thousand VMs is
// a few thousand VMI events, and each plan lists them all. Migration events,
// which free a slot, are not delayed.
const vmiEventWindow = 100 * time.Millisecond

// vmiWindow is how long a VMI event waits to join a plan (old is nil for a
// VMI created, new for one deleted). One that can change what the plan does
// waits vmiEventWindow. One that can change only the counts waits
// core.CountsInterval, as long as the counts are held anyway: a VMI created
// (it starts Pending; its move waits for the update that makes it Running)
// or deleted (a migration of it frees its slot by its own event), any event
// while the gate is closed, and, while nothing is outdated, an update that
// cannot make a VMI outdated (another actor's migrations moving VMIs
// between nodes). An uninstall's ten thousand VMI deletions, or a drain's
// VMI updates that someone else moves, are then one plan per interval, not
// ten a second over every VMI.
func (r *Reconciler) vmiWindow(o, n *core.VMI) time.Duration {
	switch {
	case r.gateClosed.Load() || o == nil || n == nil:
		return core.CountsInterval
	case r.outdated.Load() > 0 || mayBecomeOutdated(o, n):
		return vmiEventWindow
	}
	return core.CountsInterval
}

// migrationWindow is how long a migration event waits to join a plan: none
// for a workload-update migration (it frees or takes a slot of the updater's
// own), nor for any while VMIs are outdated (a slot taken or freed decides
// what starts next). Another actor's migrations while nothing is outdated
// change only the counts and wait core.CountsInterval: a drain that someone
// else runs over ten thousand VMIs is then one plan per interval, not one per
// migration event.
func (r *Reconciler) migrationWindow(o, n *core.Migration) time.Duration {
	m := n
	if m == nil {
		m = o
	}
	if m == nil || m.WorkloadUpdate || r.outdated.Load() > 0 {
		return 0
	}
	return core.CountsInterval
}

// mayBecomeOutdated: the update changes what decides whether a VMI is to be
// moved (its launcher, phase, deletion, choice, or a test's abortion request),
// not only where it runs or how its migration goes.
func mayBecomeOutdated(o, n *core.VMI) bool {
	const decides = core.Deleting | core.TestAbort | core.HasChoice
	return o.UID != n.UID || o.Phase != n.Phase || o.Launcher != n.Launcher ||
		o.Flags&decides != n.Flags&decides || o.Choice != n.Choice
}

// notOwnStatusWrite drops KubeVirt updates that change only what no plan reads:
// status.workloadUpdates (this updater's own write, which would otherwise run
// a second identical plan after every one that writes), virt-controller's
// outdated count, and status.handlerRollout (the rollout's progress, written
// every second of a fast step; each would plan over every VMI in the cluster
// while the gate is closed anyway).
var notOwnStatusWrite = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, okO := e.ObjectOld.(*v1.KubeVirt)
	n, okN := e.ObjectNew.(*v1.KubeVirt)
	if !okO || !okN {
		return true
	}
	strip := func(kv *v1.KubeVirt) *v1.KubeVirt {
		c := kv.DeepCopy()
		c.ResourceVersion, c.ManagedFields = "", nil
		c.Status.WorkloadUpdates, c.Status.OutdatedVirtualMachineInstanceWorkloads, c.Status.HandlerRollout = nil, nil, nil
		return c
	}
	return !equality.Semantic.DeepEqual(strip(o), strip(n))
}}

// targetChanged passes node events that can change where a migration may
// land: a node added or removed, cordoned or uncordoned, Ready or not, its
// labels or taints edited. Heartbeats and image lists do not.
var targetChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, okO := e.ObjectOld.(*corev1.Node)
	n, okN := e.ObjectNew.(*corev1.Node)
	if !okO || !okN {
		return true
	}
	return o.Spec.Unschedulable != n.Spec.Unschedulable || nodeReady(o) != nodeReady(n) ||
		!equality.Semantic.DeepEqual(o.Labels, n.Labels) || !equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
}}

func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// openGatePredicate drops every event while the gate is closed.
func (r *Reconciler) openGatePredicate() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(_ client.Object) bool { return !r.gateClosed.Load() })
}

// migrationPasses: a migration event that may bring a plan. Dropped while
// the gate is closed, and updates that change nothing a plan reads
// (core.PlanReadsChange).
func (r *Reconciler) migrationPasses(o, n *core.Migration) bool {
	if r.gateClosed.Load() {
		return false
	}
	return o == nil || n == nil || core.PlanReadsChange(o, n)
}

// vmiPasses: a VMI event that may bring a plan. A VMI created or deleted
// always passes: it changes the outdated count the status reports while the
// updater waits (dropped, a count taken before the VMIs appeared stayed until
// the gate opened); they are rare beside updates, and gathered over a window.
// Updates are dropped while the gate is closed, and those that change nothing
// the planner reads.
func (r *Reconciler) vmiPasses(o, n *core.VMI) bool {
	if o == nil || n == nil {
		return true
	}
	return !r.gateClosed.Load() && plannerInputChanged(o, n)
}

// plannerInputChanged: a field that PlanUpdate reads differs. The compact
// form holds nothing else but the VMI's identity, so any other difference is
// one.
func plannerInputChanged(o, n *core.VMI) bool {
	return o.UID != n.UID || o.Phase != n.Phase || o.Node != n.Node || o.Launcher != n.Launcher ||
		o.Evacuation != n.Evacuation || o.Flags != n.Flags || o.Choice != n.Choice ||
		!equality.Semantic.DeepEqual(o.Migration, n.Migration) || !slices.Equal(o.ActivePods, n.ActivePods) ||
		o.Placement != n.Placement
}
