package rollout

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// The migration probe live-migrates one VMI the admin selected off the
// canary node and back onto it (a VMI that runs there), or onto it, off it
// and onto it again (one that runs elsewhere): virt-handler on the canary
// node is the target of one migration and the source of another, and the
// VMI ends on the canary node, which runs the target version. The probe
// never harms what it moves: one migration at a time, each named from the
// rollout and the move (a second create meets AlreadyExists), only a VMI the
// workload updater would call movable (workloadupdate.Movable), never while
// another migration touches its node or the canary node, and only with room
// under the updater's caps (workloadupdate.Settings.Room), which count the
// probe's migrations as its own. On a failure its unfinished migration is
// aborted (deleted).

// Direction of a probe move.
type Direction string

const (
	// Onto the canary node.
	Onto Direction = "Onto"
	// Off the canary node.
	Off Direction = "Off"
)

// ProbeDirectionAnnotation on a probe migration is its Direction.
const ProbeDirectionAnnotation = "kubevirt.io/virt-operator-handler-probe-direction"

// probeNamePrefix starts every probe migration's name.
const probeNamePrefix = "kubevirt-handler-probe-"

// phaseAborted is a probe move's phase once the probe deleted its migration.
const phaseAborted = "Aborted"

// migrationGrace is how long a probe migration the operator created may be
// missing from its cache before it counts as deleted by someone else.
const migrationGrace = 30 * time.Second

// ProbeState is the VMI the probe moves and its moves.
type ProbeState struct {
	Namespace, Name string
	UID             types.UID
	// Node is the canary node the VMI goes onto and off.
	Node  string
	Moves []ProbeMove
}

// VMI is namespace/name.
func (p ProbeState) VMI() string { return p.Namespace + "/" + p.Name }

// ProbeMove is one migration of the probe.
type ProbeMove struct {
	Direction Direction
	// Migration is its name (in the VMI's namespace), "" until created.
	Migration string
	// Phase is the migration's phase when last seen, phaseAborted once the
	// probe deleted it.
	Phase     string
	CreatedAt time.Time
	From, To  string
}

func (m ProbeMove) finished() bool {
	switch apiv1.VirtualMachineInstanceMigrationPhase(m.Phase) {
	case apiv1.MigrationSucceeded, apiv1.MigrationFailed, phaseAborted:
		return true
	}
	return false
}

// probeUnfinished: a probe migration was created and has not finished.
func (c Checks) probeUnfinished() bool {
	return c.Probe != nil && slices.ContainsFunc(c.Probe.Moves, func(m ProbeMove) bool { return m.Migration != "" && !m.finished() })
}

// sequence is the moves for a VMI on the canary node or elsewhere: either way
// the canary's virt-handler receives and sends a migration, and the VMI ends
// on the canary node.
func sequence(onCanary bool) []ProbeMove {
	if onCanary {
		return []ProbeMove{{Direction: Off}, {Direction: Onto}}
	}
	return []ProbeMove{{Direction: Onto}, {Direction: Off}, {Direction: Onto}}
}

// ProbeKey identifies a rollout's probe migrations (their
// workloadupdate.HandlerProbeLabel value, and in their names): its target and
// its start, to the second as status keeps it.
func ProbeKey(targetID string, startedAt time.Time) string {
	sum := sha256.Sum256([]byte(targetID + "/" + strconv.FormatInt(startedAt.Unix(), 10)))
	return hex.EncodeToString(sum[:5])
}

// ProbeMigrationName names a rollout's i-th probe migration: derived, so a
// second create of the same move (a lagging cache, a lost status write) meets
// AlreadyExists and never makes a second migration.
func ProbeMigrationName(key string, i int) string {
	return probeNamePrefix + key + "-" + strconv.Itoa(i)
}

// probeWorld is what one pass of the probe sees.
type probeWorld struct {
	pp       *ProbePolicy
	key      string
	nodeName string
	node     *corev1.Node // the canary node; nil when gone
	dp       *DataPlane
	ix       workloadupdate.Index
	vmis     map[string]*apiv1.VirtualMachineInstance // by namespace/name
	mine     map[int]*apiv1.VirtualMachineInstanceMigration
	busy     map[string]string // node → another unfinished migration touching it
	now      time.Time
}

func newProbeWorld(pp *ProbePolicy, key, node string, dp *DataPlane, migrations []Migration, now time.Time) *probeWorld {
	w := &probeWorld{pp: pp, key: key, nodeName: node, dp: dp, ix: workloadupdate.IndexMigrations(dp.Migrations),
		vmis: map[string]*apiv1.VirtualMachineInstance{}, mine: map[int]*apiv1.VirtualMachineInstanceMigration{},
		busy: map[string]string{}, now: now}
	for i := range dp.Nodes {
		if dp.Nodes[i].Name == node {
			w.node = &dp.Nodes[i]
		}
	}
	for i := range dp.VMIs {
		w.vmis[dp.VMIs[i].Namespace+"/"+dp.VMIs[i].Name] = &dp.VMIs[i]
	}
	for i := range dp.Migrations {
		m := &dp.Migrations[i]
		if idx, ok := w.moveIndex(m); ok && key != "" {
			w.mine[idx] = m
		}
	}
	for _, m := range migrations {
		if strings.HasPrefix(m.Name, probeNamePrefix+key+"-") {
			continue
		}
		for _, n := range []string{m.SourceNode, m.TargetNode} {
			if _, seen := w.busy[n]; n != "" && !seen {
				w.busy[n] = m.String()
			}
		}
	}
	return w
}

// moveIndex is the move a migration of this rollout's probe is, by its name.
func (w *probeWorld) moveIndex(m *apiv1.VirtualMachineInstanceMigration) (int, bool) {
	if m.Labels[workloadupdate.HandlerProbeLabel] != w.key {
		return 0, false
	}
	i, err := strconv.Atoi(strings.TrimPrefix(m.Name, probeNamePrefix+w.key+"-"))
	return i, err == nil && i >= 0 && i < 3
}

// runProbe moves the probe on by one pass and records where it stands in r;
// it reports whether the probe failed (r.Message then says why).
func (pl *planner) runProbe(r *CheckResult) (failed bool) {
	dp := pl.obs.DataPlane
	if dp == nil {
		r.State, r.Message = CheckHolding, "waiting to read the cluster's VMIs and migrations"
		return false
	}
	nodes := slices.Sorted(slices.Values(pl.st.CanaryNodes))
	w := newProbeWorld(pl.p.Checks.Probe, ProbeKey(pl.st.TargetID, pl.st.StartedAt), nodes[0], dp, pl.obs.Migrations, pl.obs.Now)
	pl.abortStale(w)
	ps := pl.st.Checks.Probe
	if ps == nil {
		ps = w.adopt()
	}
	if first := w.firstCreated(); r.Deadline.IsZero() && !first.IsZero() {
		r.Deadline = first.Add(w.pp.Timeout) // adopted: its deadline counts from its first migration
	}
	if ps == nil {
		var wait, none string
		ps, wait, none = w.choose()
		switch {
		case pl.obs.Paused:
			r.State, r.Message = CheckHolding, "paused: the probe starts no migration"
			return false
		case ps != nil:
		case wait != "":
			r.State, r.Message = CheckHolding, "waiting: "+wait
			return false
		case w.pp.PassWhenNoneEligible:
			r.State, r.Message, r.FinishedAt = CheckSkipped, none+": passed without a migration (whenNoneEligible: Pass)", pl.obs.Now
			return false
		default:
			r.State, r.Message = CheckHolding, none+": holding until one can be moved (whenNoneEligible: Hold)"
			return false
		}
	}
	r.VMI = ps.VMI()
	failed = pl.stepProbe(w, ps, r)
	if slices.ContainsFunc(ps.Moves, func(m ProbeMove) bool { return m.Migration != "" }) {
		pl.st.Checks.Probe = ps
	}
	return failed
}

// stepProbe follows the probe's moves: a finished one leads to the next, an
// unfinished one is waited for until the deadline, and the next one is
// created when nothing stands in its way. It reports a failure.
func (pl *planner) stepProbe(w *probeWorld, ps *ProbeState, r *CheckResult) (failed bool) {
	now := w.now
	vmi := w.vmis[ps.VMI()]
	if vmi != nil && ps.UID != "" && vmi.UID != ps.UID {
		vmi = nil // a new VMI of that name is not the one the probe moved
	}
	if vmi != nil && ps.UID == "" {
		ps.UID = vmi.UID
	}
	fail := func(format string, args ...any) bool {
		r.State, r.Message, r.FinishedAt = CheckFailed, fmt.Sprintf(format, args...), now
		return true
	}
	late := !r.Deadline.IsZero() && !now.Before(r.Deadline)
	r.State = CheckRunning
	for i := range ps.Moves {
		mv := &ps.Moves[i]
		m := w.mine[i]
		if m != nil {
			observeMove(mv, m, vmi)
		}
		what := fmt.Sprintf("live migration %s of VMI %s %s node %s", mv.Migration, ps.VMI(), directionWord(mv.Direction), ps.Node)
		switch {
		case mv.Phase == string(apiv1.MigrationSucceeded):
			continue
		case mv.Phase == string(apiv1.MigrationFailed):
			return fail("%s failed: %s", what, failureReason(m, vmi))
		case mv.Phase == phaseAborted:
			return fail("%s was aborted", what)
		case mv.Migration != "" && m == nil && now.Sub(mv.CreatedAt) >= migrationGrace:
			mv.Phase = phaseAborted // gone: nothing left to abort
			return fail("%s was deleted before it finished", what)
		case mv.Migration != "" && late:
			return fail("timed out after %s: %s is still %s", w.pp.Timeout, what, phaseWord(mv.Phase))
		case mv.Migration != "":
			r.Message = fmt.Sprintf("move %d of %d: %s is %s (deadline %s)", i+1, len(ps.Moves), what, phaseWord(mv.Phase), r.Deadline.UTC().Format(time.RFC3339))
			pl.recheckIn(r.Deadline.Sub(now))
			return false
		}
		why := pl.startMove(w, ps, i, vmi, r)
		if why == "" {
			return false
		}
		if i > 0 && (vmi == nil || vmi.Status.Phase != apiv1.VMIRunning) {
			return fail("VMI %s %s after the probe moved it", ps.VMI(), why)
		}
		if late {
			return fail("timed out after %s waiting to move VMI %s %s node %s: %s", w.pp.Timeout, ps.VMI(), directionWord(mv.Direction), ps.Node, why)
		}
		r.Message = fmt.Sprintf("move %d of %d waits: %s", i+1, len(ps.Moves), why)
		if !r.Deadline.IsZero() {
			pl.recheckIn(r.Deadline.Sub(now))
		}
		return false
	}
	switch {
	case vmi == nil:
		return fail("VMI %s is gone after the probe moved it", ps.VMI())
	case vmi.Status.NodeName != ps.Node && late:
		return fail("timed out after %s: VMI %s reports node %q after its last migration onto node %s", w.pp.Timeout, ps.VMI(), vmi.Status.NodeName, ps.Node)
	case vmi.Status.NodeName != ps.Node:
		r.Message = fmt.Sprintf("waiting for VMI %s to report node %s after its last migration", ps.VMI(), ps.Node)
		return false
	}
	r.State, r.FinishedAt = CheckPassed, now
	r.Message = fmt.Sprintf("VMI %s moved %s (%d live migrations in %s)", ps.VMI(), sequenceText(ps.Moves, ps.Node),
		len(ps.Moves), now.Sub(r.Deadline.Add(-w.pp.Timeout)).Round(time.Second))
	return false
}

// startMove creates move i of the probe, or says what it waits for: the VMI
// must still be movable, neither its node nor the canary node busy with
// another migration, the caps must leave room, and the target must fit.
func (pl *planner) startMove(w *probeWorld, ps *ProbeState, i int, vmi *apiv1.VirtualMachineInstance, r *CheckResult) (waits string) {
	mv := &ps.Moves[i]
	switch {
	case vmi == nil:
		return "is gone"
	case vmi.Status.Phase != apiv1.VMIRunning:
		return "is " + orUnset(string(vmi.Status.Phase))
	case pl.obs.Paused:
		return "paused: the probe starts no migration"
	}
	if why := workloadupdate.Movable(vmi, w.ix.Unfinished[workloadupdate.KeyOf(vmi)]); why != "" {
		return "VMI " + ps.VMI() + " is " + why
	}
	if b := w.busyWith(vmi.Status.NodeName); b != "" {
		return b
	}
	if why := w.dp.Limits.Room(w.ix, w.dp.VMIs, vmi.Status.NodeName); why != "" {
		return why
	}
	target := ps.Node
	if mv.Direction == Onto {
		if why := workloadupdate.FitsNode(vmi, w.node); why != "" {
			return "VMI " + ps.VMI() + " cannot go onto the canary node: " + why
		}
	} else if target = w.offTarget(vmi); target == "" {
		return "VMI " + ps.VMI() + " cannot leave the canary node: no other node free of migrations can take it"
	}
	m := w.migration(i, mv.Direction, vmi, target)
	pl.d.CreateMigration = m
	mv.Migration, mv.Phase, mv.CreatedAt, mv.From, mv.To = m.Name, "", w.now, vmi.Status.NodeName, target
	if r.Deadline.IsZero() {
		r.Deadline = w.now.Add(w.pp.Timeout)
	}
	r.Message = fmt.Sprintf("move %d of %d: created live migration %s of VMI %s %s node %s (deadline %s)", i+1, len(ps.Moves), m.Name,
		ps.VMI(), directionWord(mv.Direction), ps.Node, r.Deadline.UTC().Format(time.RFC3339))
	pl.recheckIn(checkRecheck)
	return ""
}

// offTarget is where the probe moves vmi off the canary node: the first
// node by name, other than the canary and the VMI's own, that the VMI fits
// and no other migration touches; "" when there is none.
func (w *probeWorld) offTarget(vmi *apiv1.VirtualMachineInstance) string {
	for _, n := range slices.SortedFunc(slices.Values(w.dp.Nodes), func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) }) {
		_, busy := w.busy[n.Name]
		if n.Name != w.nodeName && n.Name != vmi.Status.NodeName && !busy && workloadupdate.FitsNode(vmi, &n) == "" {
			return n.Name
		}
	}
	return ""
}

// migration is the probe's move i of vmi to node, pinned there by the
// node's hostname label (addedNodeSelector): onto the canary node, or off it
// to a node no other migration touches.
func (w *probeWorld) migration(i int, dir Direction, vmi *apiv1.VirtualMachineInstance, node string) *apiv1.VirtualMachineInstanceMigration {
	m := &apiv1.VirtualMachineInstanceMigration{
		TypeMeta: metav1.TypeMeta{APIVersion: apiv1.GroupVersion.String(), Kind: "VirtualMachineInstanceMigration"},
		ObjectMeta: metav1.ObjectMeta{Name: ProbeMigrationName(w.key, i), Namespace: vmi.Namespace,
			Labels:      map[string]string{workloadupdate.HandlerProbeLabel: w.key},
			Annotations: map[string]string{ProbeDirectionAnnotation: string(dir)}},
		Spec: apiv1.VirtualMachineInstanceMigrationSpec{VMIName: vmi.Name},
	}
	host := node
	for i := range w.dp.Nodes {
		if n := &w.dp.Nodes[i]; n.Name == node && n.Labels[corev1.LabelHostname] != "" {
			host = n.Labels[corev1.LabelHostname]
		}
	}
	m.Spec.AddedNodeSelector = map[string]string{corev1.LabelHostname: host}
	return m
}

// choose picks the VMI to move: among the selected ones, the first movable
// one (those on the canary node first, then by namespace and name) that fits
// the canary node and has another node to go to, whose node and the canary
// node are free of other migrations, with room under the caps. wait says why
// an eligible VMI waits; none, why no VMI is eligible at all.
func (w *probeWorld) choose() (ps *ProbeState, wait, none string) {
	var cands []*apiv1.VirtualMachineInstance
	for i := range w.dp.VMIs {
		if vmi := &w.dp.VMIs[i]; w.pp.Selector.Matches(labels.Set(vmi.Labels)) {
			cands = append(cands, vmi)
		}
	}
	if len(cands) == 0 {
		return nil, "", "no VMI matches vmiSelector " + w.pp.Selector.String()
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if onA, onB := a.Status.NodeName == w.nodeName, b.Status.NodeName == w.nodeName; onA != onB {
			return onA
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	targets := workloadupdate.NewTargets(w.dp.Nodes)
	var reasons []string
	for _, vmi := range cands {
		name := vmi.Namespace + "/" + vmi.Name
		onCanary := vmi.Status.NodeName == w.nodeName
		why := workloadupdate.Movable(vmi, w.ix.Unfinished[workloadupdate.KeyOf(vmi)])
		if why == "" && !onCanary {
			why = workloadupdate.FitsNode(vmi, w.node)
		}
		if why == "" {
			if t := targets.Why(vmi); t != "" {
				why = "cannot leave its node: " + t
			}
		}
		if why != "" {
			reasons = append(reasons, name+" "+why)
			continue
		}
		if b := w.busyWith(vmi.Status.NodeName); b != "" {
			wait = cmpOr(wait, "VMI "+name+": "+b)
			continue
		}
		if onCanary && w.offTarget(vmi) == "" {
			wait = cmpOr(wait, "VMI "+name+": no other node free of migrations can take it off the canary node")
			continue
		}
		if r := w.dp.Limits.Room(w.ix, w.dp.VMIs, vmi.Status.NodeName); r != "" {
			wait = cmpOr(wait, "VMI "+name+": "+r)
			continue
		}
		return &ProbeState{Namespace: vmi.Namespace, Name: vmi.Name, UID: vmi.UID, Node: w.nodeName, Moves: sequence(onCanary)}, "", ""
	}
	if wait != "" {
		return nil, wait, ""
	}
	shown, more := reasons[:min(len(reasons), 3)], ""
	if len(reasons) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(reasons)-len(shown))
	}
	return nil, "", fmt.Sprintf("%d VMIs match vmiSelector %s, none can be moved: %s%s", len(cands), w.pp.Selector.String(),
		strings.Join(shown, "; "), more)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// busyWith says which other unfinished migration touches node or the
// canary node ("" when none does).
func (w *probeWorld) busyWith(node string) string {
	for _, n := range []string{w.nodeName, node} {
		if m := w.busy[n]; m != "" {
			return "migration " + m + " runs on node " + n
		}
	}
	return ""
}

// adopt rebuilds the probe from this rollout's migrations when status lost
// it (a status write that failed after a migration was created): the VMI is
// the migration's, the sequence follows from a move's index and direction.
func (w *probeWorld) adopt() *ProbeState {
	idx := slices.Sorted(func(yield func(int) bool) {
		for i := range w.mine {
			if !yield(i) {
				return
			}
		}
	})
	if len(idx) == 0 {
		return nil
	}
	i, m := idx[0], w.mine[idx[0]]
	dir := Direction(m.Annotations[ProbeDirectionAnnotation])
	onCanary := (i == 0 && dir == Off) || (i == 1 && dir == Onto)
	return &ProbeState{Namespace: m.Namespace, Name: m.Spec.VMIName, Node: w.nodeName, Moves: sequence(onCanary)}
}

// firstCreated is when this rollout's first probe migration was created
// (zero when none is seen).
func (w *probeWorld) firstCreated() time.Time {
	var first time.Time
	for _, m := range w.mine {
		if c := m.CreationTimestamp.Time; first.IsZero() || c.Before(first) {
			first = c
		}
	}
	return first
}

// abortStale aborts the unfinished probe migrations of earlier rollouts (the
// target changed mid-probe): nobody waits for them any more.
func (pl *planner) abortStale(w *probeWorld) {
	for i := range w.dp.Migrations {
		m := &w.dp.Migrations[i]
		if k, ok := m.Labels[workloadupdate.HandlerProbeLabel]; ok && k != w.key && !workloadupdate.IsFinished(m) && m.DeletionTimestamp == nil {
			pl.d.AbortMigrations = append(pl.d.AbortMigrations, types.NamespacedName{Namespace: m.Namespace, Name: m.Name})
		}
	}
}

// abortProbe aborts the probe's unfinished migration (the rollout failed).
func (pl *planner) abortProbe() {
	ps := pl.st.Checks.Probe
	if ps == nil {
		return
	}
	for i := range ps.Moves {
		if mv := &ps.Moves[i]; mv.Migration != "" && !mv.finished() {
			pl.d.AbortMigrations = append(pl.d.AbortMigrations, types.NamespacedName{Namespace: ps.Namespace, Name: mv.Migration})
			mv.Phase = phaseAborted
		}
	}
}

// observeMove copies what the migration says of a move: its phase and nodes.
func observeMove(mv *ProbeMove, m *apiv1.VirtualMachineInstanceMigration, vmi *apiv1.VirtualMachineInstance) {
	mv.Migration = m.Name
	if mv.Phase != phaseAborted {
		mv.Phase = string(m.Status.Phase)
	}
	if mv.CreatedAt.IsZero() {
		mv.CreatedAt = m.CreationTimestamp.Time
	}
	st := m.Status.MigrationState
	if vmi != nil && vmi.Status.MigrationState != nil && vmi.Status.MigrationState.MigrationUID == m.UID {
		st = vmi.Status.MigrationState
	}
	if st != nil {
		mv.From, mv.To = cmpOr(st.SourceNode, mv.From), cmpOr(st.TargetNode, mv.To)
	}
}

// failureReason is why a migration failed: the VMI's migration state says it
// (the operator's cache keeps little of a finished migration), else the
// migration's.
func failureReason(m *apiv1.VirtualMachineInstanceMigration, vmi *apiv1.VirtualMachineInstance) string {
	if m != nil && vmi != nil && vmi.Status.MigrationState != nil && vmi.Status.MigrationState.MigrationUID == m.UID &&
		vmi.Status.MigrationState.FailureReason != "" {
		return vmi.Status.MigrationState.FailureReason
	}
	if m != nil && m.Status.MigrationState != nil && m.Status.MigrationState.FailureReason != "" {
		return m.Status.MigrationState.FailureReason
	}
	return "no reason given"
}

// phaseWord is a migration's phase for a message.
func phaseWord(phase string) string {
	if phase == "" {
		return "not started yet"
	}
	return phase
}

func directionWord(d Direction) string {
	if d == Off {
		return "off"
	}
	return "onto"
}

// sequenceText says where the moves take the VMI: "off node-0 and back onto
// it", or "onto node-0, off it and back onto it".
func sequenceText(moves []ProbeMove, node string) string {
	if len(moves) > 0 && moves[0].Direction == Off {
		return "off node " + node + " and back onto it"
	}
	return "onto node " + node + ", off it and back onto it"
}
