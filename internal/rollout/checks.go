package rollout

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// Data-plane checks. A canary that stays Ready with no restart may still be
// unable to run a VM; with spec.handlerRollout.dataPlaneChecks set, the
// rollout does not widen from Canary but goes to Verifying, and widens only
// once every check has passed. A failed check is a failed canary (Failed,
// rolled back, Warning ReasonDataPlaneCheckFailed). The checks' progress is
// State.Checks, in status, so a restarted operator resumes it.

// CheckName names a data-plane check (status.handlerRollout.dataPlaneChecks[].name).
type CheckName string

const (
	// CheckCanaryVMIs: the VMIs on the canary nodes when the canary began stay
	// Running there through the bake and the checks.
	CheckCanaryVMIs CheckName = "CanaryVMIs"
	// CheckCanaryPod: the canary pod stays Ready with no restart, and its node
	// is not marked unschedulable for VMs, from the bake's end.
	CheckCanaryPod CheckName = "CanaryPod"
	// CheckMigrationProbe: a selected VMI live-migrates onto the canary node and off it.
	CheckMigrationProbe CheckName = "MigrationProbe"
)

// CheckState is where one check stands.
type CheckState string

const (
	CheckPending CheckState = "Pending"
	CheckRunning CheckState = "Running"
	// CheckHolding: the migration probe waits for a VMI it can move.
	CheckHolding CheckState = "Holding"
	CheckPassed  CheckState = "Passed"
	// CheckSkipped: nothing was eligible and the probe passed as whenNoneEligible asks.
	CheckSkipped CheckState = "Skipped"
	CheckFailed  CheckState = "Failed"
	// CheckStopped: another check failed (or the canary crashed) first.
	CheckStopped CheckState = "Stopped"
)

// Finished reports whether the check has its verdict.
func (s CheckState) Finished() bool {
	switch s {
	case CheckPassed, CheckSkipped, CheckFailed, CheckStopped:
		return true
	}
	return false
}

// ReasonDataPlaneCheckFailed (Warning): a data-plane check failed; the
// rollout rolls back.
const ReasonDataPlaneCheckFailed = "HandlerDataPlaneCheckFailed"

// checkRecheck is how often a running check looks again without an event:
// VMI events do not bring the operator back, and a VMI failing on the canary
// node must not wait for the bake's or the probe's end to be seen.
const checkRecheck = 5 * time.Second

// DataPlaneChecks are spec.handlerRollout.dataPlaneChecks as a policy.
type DataPlaneChecks struct {
	CanaryVMIs, CanaryPod bool
	Probe                 *ProbePolicy
}

// ProbePolicy is the migration probe's policy.
type ProbePolicy struct {
	// Selector selects the VMIs it may move; never empty.
	Selector labels.Selector
	// Timeout bounds its migrations, from the first one's creation.
	Timeout time.Duration
	// PassWhenNoneEligible: with nothing to move the check passes (Skipped)
	// instead of holding the rollout.
	PassWhenNoneEligible bool
}

// DefaultProbeTimeout is 5 minutes: a live migration of an idle probe VM
// takes seconds; a canary that cannot finish two or three of them in five
// minutes cannot take a fleet's migrations either.
const DefaultProbeTimeout = 5 * time.Minute

// Any reports whether any check is asked for.
func (c DataPlaneChecks) Any() bool { return c.CanaryVMIs || c.CanaryPod || c.Probe != nil }

// names are the checks asked for, in the order status lists them.
func (c DataPlaneChecks) names() []CheckName {
	var out []CheckName
	if c.CanaryVMIs {
		out = append(out, CheckCanaryVMIs)
	}
	if c.CanaryPod {
		out = append(out, CheckCanaryPod)
	}
	if c.Probe != nil {
		out = append(out, CheckMigrationProbe)
	}
	return out
}

// checksFrom reads spec.handlerRollout.dataPlaneChecks; an error names the field.
func checksFrom(spec *apiv1.HandlerDataPlaneChecks) (DataPlaneChecks, error) {
	if spec == nil {
		return DataPlaneChecks{}, nil
	}
	c := DataPlaneChecks{CanaryVMIs: spec.CanaryVMIs, CanaryPod: spec.CanaryPod}
	mp := spec.MigrationProbe
	if mp == nil {
		return c, nil
	}
	const field = "dataPlaneChecks.migrationProbe"
	if len(mp.VMISelector.MatchLabels) == 0 && len(mp.VMISelector.MatchExpressions) == 0 {
		return c, errors.New(field + ".vmiSelector: must select something: name the VMs the probe may move with matchLabels or matchExpressions (an empty selector would move any VM)")
	}
	sel, err := metav1.LabelSelectorAsSelector(&mp.VMISelector)
	if err != nil {
		return c, fmt.Errorf("%s.vmiSelector: %w", field, err)
	}
	if err := mp.Timeout.Check("timeout"); err != nil {
		return c, fmt.Errorf("%s.%w", field, err)
	}
	p := &ProbePolicy{Selector: sel, Timeout: DefaultProbeTimeout, PassWhenNoneEligible: mp.WhenNoneEligible == apiv1.ProbePass}
	if mp.Timeout != nil {
		if mp.Timeout.Duration <= 0 {
			return c, fmt.Errorf("%s.timeout: must be positive, got %s", field, mp.Timeout.Duration)
		}
		p.Timeout = mp.Timeout.Duration
	}
	switch mp.WhenNoneEligible {
	case "", apiv1.ProbeHold, apiv1.ProbePass:
	default:
		return c, fmt.Errorf("%s.whenNoneEligible: must be Hold or Pass, got %q", field, mp.WhenNoneEligible)
	}
	c.Probe = p
	return c, nil
}

// DataPlane is what the checks read (Observation.DataPlane); the controller
// fills it, from its cache, only when NeedsDataPlane says so.
type DataPlane struct {
	// VMIs and Migrations are every VMI and migration in the cluster.
	VMIs       []apiv1.VirtualMachineInstance
	Migrations []apiv1.VirtualMachineInstanceMigration
	// Nodes are every node (the canary node's schedulable label, where a
	// probe VMI may go).
	Nodes []corev1.Node
	// Limits are the workload updater's migration caps, which the probe's
	// migrations count against.
	Limits workloadupdate.Settings
}

// Checks is the data-plane checks' progress (State.Checks; in status
// dataPlaneChecks, canaryVMIs and migrationProbe).
type Checks struct {
	Results []CheckResult
	// Watched are the VMIs CheckCanaryVMIs watches, by namespace and name.
	Watched []WatchedVMI
	// Probe is what the migration probe moves; nil until its first migration
	// is created (until then the VMI is chosen afresh on every pass).
	Probe *ProbeState
}

// CheckResult is one check's progress.
type CheckResult struct {
	Name  CheckName
	State CheckState
	// VMI (namespace/name) the check is about: the one it failed on, or the
	// probe's.
	VMI, Message                    string
	StartedAt, Deadline, FinishedAt time.Time
}

// WatchedVMI is a VMI CheckCanaryVMIs watches: it ran on Node, a canary node,
// when the canary began.
type WatchedVMI struct {
	Namespace, Name string
	UID             types.UID
	Node            string
}

func (w WatchedVMI) String() string { return w.Namespace + "/" + w.Name }

// MaxWatchedVMIs bounds the VMIs CheckCanaryVMIs watches (status stays
// small): the first by namespace and name.
const MaxWatchedVMIs = 256

func (c Checks) clone() Checks {
	out := Checks{Results: slices.Clone(c.Results), Watched: slices.Clone(c.Watched)}
	if c.Probe != nil {
		p := *c.Probe
		p.Moves = slices.Clone(c.Probe.Moves)
		out.Probe = &p
	}
	return out
}

// result is the named check's entry; nil when it is not asked for.
func (c *Checks) result(name CheckName) *CheckResult {
	for i := range c.Results {
		if c.Results[i].Name == name {
			return &c.Results[i]
		}
	}
	return nil
}

// NeedsDataPlane reports whether Plan would read obs.DataPlane: while a
// rollout with checks may record, judge or abort (Started, Canary,
// Verifying, a rollout resumed without stored state, a Failed one whose
// probe left a migration unfinished). The controller lists every VMI and
// migration only then.
func NeedsDataPlane(obs Observation, p Policy) bool {
	if !p.Checks.Any() || obs.DaemonSet == nil {
		return false
	}
	prev := obs.Previous
	switch {
	case prev != nil && prev.Phase == PhaseFailed && (prev.TargetID == obs.Target.ID || !obs.SpecChanged):
		return prev.Checks.probeUnfinished() // it holds: only an unfinished probe migration to abort
	case prev == nil || obs.SpecChanged:
		return true
	case prev.Phase == PhaseStarted || prev.Phase == PhaseCanary || prev.Phase == PhaseVerifying:
		return true
	case !prev.Phase.Active():
		return !atRest(obs, *prev) // a resume may land in Canary
	}
	return false
}

// startChecks lists the checks the policy asks for, keeping the progress of
// those already listed (a check turned on mid-rollout starts Pending; one
// turned off is dropped).
func (pl *planner) startChecks() {
	names := pl.p.Checks.names()
	var results []CheckResult
	for _, n := range names {
		if r := pl.st.Checks.result(n); r != nil {
			results = append(results, *r)
			continue
		}
		results = append(results, CheckResult{Name: n, State: CheckPending})
	}
	pl.st.Checks.Results = results
	if !pl.p.Checks.CanaryVMIs {
		pl.st.Checks.Watched = nil
	}
}

// begin marks a pending check running from now.
func (pl *planner) begin(name CheckName) *CheckResult {
	r := pl.st.Checks.result(name)
	if r != nil && r.State == CheckPending {
		r.State, r.StartedAt = CheckRunning, pl.obs.Now
	}
	return r
}

// watchCanaryVMIs records the VMIs running on the canary nodes, once they
// are chosen: on the first pass that has them, and for a node that replaced
// another (whose VMIs are no longer watched).
func (pl *planner) watchCanaryVMIs() {
	r := pl.st.Checks.result(CheckCanaryVMIs)
	dp := pl.obs.DataPlane
	if r == nil || dp == nil || len(pl.st.CanaryNodes) == 0 || r.State.Finished() {
		return
	}
	recorded := map[string]bool{}
	if r.State != CheckPending {
		for _, n := range pl.prev.CanaryNodes {
			recorded[n] = slices.Contains(pl.st.CanaryNodes, n)
		}
	}
	kept := slices.DeleteFunc(slices.Clone(pl.st.Checks.Watched), func(w WatchedVMI) bool { return !recorded[w.Node] })
	for i := range dp.VMIs {
		vmi := &dp.VMIs[i]
		node := vmi.Status.NodeName
		if vmi.Status.Phase == apiv1.VMIRunning && vmi.DeletionTimestamp == nil &&
			slices.Contains(pl.st.CanaryNodes, node) && !recorded[node] {
			kept = append(kept, WatchedVMI{Namespace: vmi.Namespace, Name: vmi.Name, UID: vmi.UID, Node: node})
		}
	}
	slices.SortFunc(kept, func(a, b WatchedVMI) int { return strings.Compare(a.String(), b.String()) })
	pl.st.Checks.Watched = kept[:min(len(kept), MaxWatchedVMIs)]
	pl.begin(CheckCanaryVMIs)
}

// judgeWatched is the first watched VMI the canary lost, and how; "" when
// none. A VMI is lost when it failed, is in any phase but Running and
// Succeeded (its guest shut down), runs on no node, or was replaced by a new
// VMI of the same name (its VM restarted it). One on another node was moved
// by a live migration (the only way a VMI changes nodes; the probe moves
// one), and one deleted and not replaced, or being deleted, was stopped by
// its owner: neither is held against the canary.
func (pl *planner) judgeWatched() (vmi, why string) {
	dp := pl.obs.DataPlane
	if dp == nil || pl.st.Checks.result(CheckCanaryVMIs) == nil {
		return "", ""
	}
	byName := make(map[string]*apiv1.VirtualMachineInstance, len(dp.VMIs))
	for i := range dp.VMIs {
		byName[dp.VMIs[i].Namespace+"/"+dp.VMIs[i].Name] = &dp.VMIs[i]
	}
	for _, w := range pl.st.Checks.Watched {
		v := byName[w.String()]
		switch {
		case v == nil:
		case v.UID != w.UID:
			return w.String(), fmt.Sprintf("VMI %s was restarted: a new VMI replaced the one that ran on node %s", w, w.Node)
		case v.Status.Phase == apiv1.VMIFailed:
			return w.String(), fmt.Sprintf("VMI %s failed on node %s", w, w.Node)
		case v.DeletionTimestamp != nil, v.Status.Phase == apiv1.VMISucceeded:
		case v.Status.Phase != apiv1.VMIRunning:
			return w.String(), fmt.Sprintf("VMI %s is %s on node %s", w, orUnset(string(v.Status.Phase)), w.Node)
		case v.Status.NodeName == "":
			return w.String(), fmt.Sprintf("VMI %s lost its node %s: it runs on no node", w, w.Node)
		}
	}
	return "", ""
}

func orUnset(s string) string {
	if s == "" {
		return "without a phase"
	}
	return s
}

// verifying runs the checks after the bake, under OnDelete: the canary pod
// must still be updated and Ready (else it bakes again, or with CanaryPod the
// check fails), the canary VMIs stay, the probe moves its VMI; once every
// check has passed the rollout widens.
func (pl *planner) verifying() Phase {
	pl.d.UpdateStrategy = OnDelete()
	pl.startChecks()
	st := &pl.st
	if len(st.CanaryNodes) == 0 { // a state that lost its canary: pick one and bake it
		st.BakedSince = time.Time{}
		return PhaseCanary
	}
	for _, node := range st.CanaryNodes {
		what := pl.canaryUnwell(node)
		if what == "" {
			continue
		}
		if pl.p.Checks.CanaryPod {
			return pl.failCheck(CheckCanaryPod, "", what)
		}
		st.BakedSince = time.Time{}
		st.Message = what + ": the canary bakes again before its data-plane checks go on"
		return PhaseCanary
	}
	pl.watchCanaryVMIs() // when turned on after the canary began
	if r := pl.begin(CheckCanaryPod); r != nil {
		if why := pl.nodeUnschedulable(); why != "" {
			return pl.failCheck(CheckCanaryPod, "", why)
		}
		r.Message = "canary pod Ready with no restart; node schedulable for VMs"
	}
	if vmi, why := pl.judgeWatched(); why != "" {
		return pl.failCheck(CheckCanaryVMIs, vmi, why)
	}
	if r := pl.st.Checks.result(CheckCanaryVMIs); r != nil {
		r.Message = fmt.Sprintf("%d VMIs on the canary node stay Running", len(st.Checks.Watched))
	}
	probeDone := true
	if r := pl.begin(CheckMigrationProbe); r != nil {
		if failed := pl.runProbe(r); failed {
			return pl.failCheck(CheckMigrationProbe, r.VMI, r.Message)
		}
		probeDone = r.State.Finished()
	}
	if !probeDone {
		pl.recheckIn(checkRecheck)
		st.Message = "canary on " + strings.Join(st.CanaryNodes, ",") + ": data-plane checks: " + pl.checksSummary()
		return PhaseVerifying
	}
	for i := range st.Checks.Results {
		if r := &st.Checks.Results[i]; !r.State.Finished() {
			r.State, r.FinishedAt = CheckPassed, pl.obs.Now
		}
	}
	st.Message = "canary on " + strings.Join(st.CanaryNodes, ",") + " passed its data-plane checks: " + pl.checksSummary()
	if pl.obs.Paused {
		st.Message = "paused; " + st.Message + ": the rollout widens once resumed"
		return PhaseVerifying
	}
	return PhaseIncreasing
}

// recheckIn asks to look again within d at most.
func (pl *planner) recheckIn(d time.Duration) {
	if d > 0 && (pl.d.RequeueAfter == 0 || d < pl.d.RequeueAfter) {
		pl.d.RequeueAfter = d
	}
}

// canaryUnwell says what is wrong with node's canary pod ("" when it is
// updated and Ready). A restart is judged before any phase runs (Plan).
func (pl *planner) canaryUnwell(node string) string {
	pod := pl.v.byNode[node]
	switch {
	case pod == nil:
		return "the canary pod on node " + node + " is gone"
	case !metadata.PodIsUpToDate(pod, pl.obs.Target):
		return "the canary pod " + pod.Name + " on node " + node + " no longer runs the target"
	case !metadata.PodIsReady(pod):
		return "the canary pod " + pod.Name + " on node " + node + " is not Ready"
	}
	return ""
}

// nodeUnschedulable says which canary node virt-handler marked unable to run
// VMs (kubevirt.io/schedulable=false); "" when none is. An absent label is
// not held against a node, as the workload updater does not.
func (pl *planner) nodeUnschedulable() string {
	dp := pl.obs.DataPlane
	if dp == nil {
		return ""
	}
	for i := range dp.Nodes {
		n := &dp.Nodes[i]
		if slices.Contains(pl.st.CanaryNodes, n.Name) && n.Labels[metadata.SchedulableLabel] == "false" {
			return "node " + n.Name + " is marked " + metadata.SchedulableLabel + "=false: virt-handler there cannot run VMs"
		}
	}
	return ""
}

// failCheck ends the rollout on a failed check, naming it, the VMI and why;
// the other checks stop, and the probe's unfinished migration is aborted.
func (pl *planner) failCheck(name CheckName, vmi, why string) Phase {
	st := &pl.st
	if r := st.Checks.result(name); r != nil {
		r.State, r.VMI, r.Message, r.FinishedAt = CheckFailed, vmi, why, pl.obs.Now
		if r.StartedAt.IsZero() {
			r.StartedAt = pl.obs.Now
		}
	}
	pl.stopChecks()
	st.BakedSince = time.Time{}
	on := ""
	if vmi != "" {
		on = " on VMI " + vmi
	}
	st.Message = fmt.Sprintf("daemonSet %s rollout failed: data-plane check %s failed%s: %s; rolling back",
		pl.obs.DaemonSet.Name, name, on, why)
	pl.d.Event = &Event{Type: EventTypeWarning, Reason: ReasonDataPlaneCheckFailed, Message: st.Message}
	return PhaseFailed
}

// stopChecks ends the checks that have no verdict yet (another one failed,
// or the canary crashed) and aborts the probe's unfinished migration.
func (pl *planner) stopChecks() {
	for i := range pl.st.Checks.Results {
		if r := &pl.st.Checks.Results[i]; !r.State.Finished() {
			r.State, r.FinishedAt = CheckStopped, pl.obs.Now
		}
	}
	pl.abortProbe()
}

// checksSummary is one clause per check: "MigrationProbe Running (moving ...)".
func (pl *planner) checksSummary() string {
	var parts []string
	for _, r := range pl.st.Checks.Results {
		part := string(r.Name) + " " + string(r.State)
		if r.Message != "" {
			part += " (" + r.Message + ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}
