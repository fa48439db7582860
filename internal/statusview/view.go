// Package statusview renders one screen of an install or upgrade for
// `virt-operator status`: target and observed version and ID, the changed
// keys, a held rollout, each component's readiness, the virt-handler canary
// with a progress bar, the nodes waiting for live migrations and its
// data-plane checks, the workload updates draining, estimates from the
// observed rates, and the last history entries. Render is pure: the command reads the cluster and passes a Snapshot.
package statusview

import (
	"fmt"
	"math/bits"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Snapshot is what one screen shows.
type Snapshot struct {
	KubeVirt    *v1.KubeVirt
	Deployments []appsv1.Deployment
	DaemonSets  []appsv1.DaemonSet
	Now         time.Time
}

// barWidth is the number of cells of a progress bar.
const barWidth = 20

// Bar is a progress bar of done out of total, e.g. [########............] 8/20.
func Bar(done, total int) string {
	if total <= 0 {
		return "[" + strings.Repeat(".", barWidth) + "] 0/0"
	}
	done = min(max(done, 0), total)
	// done*barWidth in 128 bits: a status count near the int's range (only a
	// hand-written status has one) would overflow into a negative repeat count.
	hi, lo := bits.Mul64(uint64(done), barWidth)
	q, _ := bits.Div64(hi, lo, uint64(total)) // hi < total, as done <= total
	full := int(q)
	return fmt.Sprintf("[%s%s] %d/%d", strings.Repeat("#", full), strings.Repeat(".", barWidth-full), done, total)
}

// Done reports whether the screen shows nothing left to do: observed ==
// target, and no VMI left for the acting updater to move.
func Done(kv *v1.KubeVirt) bool {
	st := kv.Status
	if st.Phase != v1.KubeVirtPhaseDeployed || st.ObservedDeploymentID != st.TargetDeploymentID {
		return false
	}
	w := st.WorkloadUpdates
	switch {
	case w == nil || w.DeploymentID != st.TargetDeploymentID:
		return w == nil || w.Actor == v1.ActorNone
	case w.Actor == v1.ActorVirtOperator:
		return w.Outdated-leftAlone(w.Choices) == w.NeedsAttention+w.NotMovable && w.MigrationsInFlight == 0
	case w.Actor == v1.ActorVirtController:
		return st.OutdatedVirtualMachineInstanceWorkloads != nil && *st.OutdatedVirtualMachineInstanceWorkloads == 0
	}
	return true
}

// Degraded reports whether the CR says it cannot progress (Stalled, else
// upstream's Degraded outside an update).
func Degraded(kv *v1.KubeVirt) bool {
	for _, c := range kv.Status.Conditions {
		if c.Type == v1.KubeVirtConditionStalled {
			return c.Status == "True"
		}
	}
	for _, c := range kv.Status.Conditions {
		if c.Type == v1.KubeVirtConditionDegraded && c.Status == "True" && c.Reason != "UpdateInProgress" {
			return true
		}
	}
	return false
}

// Render is the screen for s.
func Render(s Snapshot) string {
	kv := s.KubeVirt
	st := kv.Status
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("KubeVirt %s/%s  phase %s  %s", kv.Namespace, kv.Name, orDash(string(st.Phase)), conditionSummary(kv))
	if st.ObservedDeploymentID == st.TargetDeploymentID {
		line("Version   %s (deployment %s)", orDash(st.ObservedKubeVirtVersion), short(st.ObservedDeploymentID))
	} else {
		line("Version   %s -> %s (deployment %s -> %s)", orDash(st.ObservedKubeVirtVersion), orDash(st.TargetKubeVirtVersion),
			short(st.ObservedDeploymentID), short(st.TargetDeploymentID))
	}
	if len(st.History) > 0 && len(st.History[0].ChangedKeys) > 0 && st.History[0].DeploymentID == st.TargetDeploymentID {
		line("Changed   %s", strings.Join(st.History[0].ChangedKeys, ", "))
	}
	if h := st.RolloutHold; h != nil {
		line("HELD      %s at %s: %s", h.Reason, orDash(h.Step), h.Message)
	}
	if msg := problem(kv); msg != "" {
		line("PROBLEM   %s", msg)
	}
	line("")
	line("Components")
	for _, c := range components(s) {
		line("  %-34s %s", c.name, c.state)
		for _, d := range c.details {
			line("  %-34s %s", "", d)
		}
	}
	if w := workloadLines(s); len(w) > 0 {
		line("")
		for _, l := range w {
			line("%s", l)
		}
	}
	if len(st.History) > 0 {
		line("")
		line("History (newest first)")
		for _, r := range st.History[:min(3, len(st.History))] {
			line("  %s", historyLine(r, s.Now))
		}
	}
	return b.String()
}

// component is one line of Components, with continuation lines under its state.
type component struct {
	name, state string
	details     []string
}

// components lists the Deployments and DaemonSets with readiness and version;
// virt-handler's line carries the canary phase and a bar, and a line below it
// the nodes that wait for live migrations.
func components(s Snapshot) []component {
	var out []component
	for _, d := range s.Deployments {
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		out = append(out, component{name: d.Name, state: fmt.Sprintf("%d/%d ready  %s", d.Status.ReadyReplicas, want, imageTag(d.Spec.Template.Spec.Containers))})
	}
	for _, ds := range s.DaemonSets {
		state := fmt.Sprintf("%d/%d ready  %s", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled, imageTag(ds.Spec.Template.Spec.Containers))
		var details []string
		if h := s.KubeVirt.Status.HandlerRollout; h != nil && ds.Name == "virt-handler" && h.TargetID == s.KubeVirt.Status.TargetDeploymentID {
			state = fmt.Sprintf("%s %s updated, %d ready  %s", h.Phase, Bar(int(h.UpdatedPods), int(h.DesiredPods)), h.ReadyPods, imageTag(ds.Spec.Template.Spec.Containers))
			if h.Paused {
				state += "  PAUSED"
			}
			if eta := handlerETA(h, s.Now); eta > 0 {
				state += "  ETA " + eta.Round(time.Second).String()
			}
			if h.CanaryNode != "" {
				state += "  canary " + h.CanaryNode
			}
			if w := migrationWaits(h, s.Now); w != "" {
				details = append(details, w)
			}
			details = append(details, checkLines(h, s.Now)...)
		}
		out = append(out, component{name: ds.Name, state: state, details: details})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// migrationWaits is the line of the nodes whose old virt-handler pod waits
// for a live migration, e.g. "2 nodes wait for live migrations: node-004
// (default/vm-7-migration, until 12:04:05Z), +1 more"; "" without a wait. The
// CR lists the first few nodes, the count covers all. A time of another day
// than now is shown in full.
func migrationWaits(h *v1.HandlerRolloutStatus, now time.Time) string {
	n := max(int(h.NodesWaitingForMigrations), len(h.MigrationWaits))
	if n == 0 {
		return ""
	}
	l := "1 node waits for a live migration"
	if n > 1 {
		l = fmt.Sprintf("%d nodes wait for live migrations", n)
	}
	var nodes []string
	for _, w := range h.MigrationWaits {
		until := "expired"
		if w.Until.After(now) {
			until = "until " + clock(w.Until.Time, now)
		}
		nodes = append(nodes, fmt.Sprintf("%s (%s, %s)", w.Node, w.Migration, until))
	}
	if more := n - len(h.MigrationWaits); more > 0 && len(nodes) > 0 {
		nodes = append(nodes, fmt.Sprintf("+%d more", more))
	}
	if len(nodes) == 0 {
		return l
	}
	return l + ": " + strings.Join(nodes, ", ")
}

// checkLines are the rollout's data-plane checks, one line each: state, the
// VMI it is about, the probe's deadline while it runs, and what it saw, e.g.
// "check MigrationProbe  Running  default/vm-1  deadline 12:05:00Z  move 1
// of 2: ...".
func checkLines(h *v1.HandlerRolloutStatus, now time.Time) []string {
	var out []string
	for _, c := range h.DataPlaneChecks {
		parts := []string{fmt.Sprintf("check %-15s %-8s", c.Name, c.State)}
		if c.VMI != "" {
			parts = append(parts, c.VMI)
		}
		if c.Deadline != nil && c.FinishedAt == nil {
			parts = append(parts, "deadline "+clock(c.Deadline.Time, now))
		}
		if c.Message != "" {
			parts = append(parts, c.Message)
		}
		out = append(out, strings.Join(parts, "  "))
	}
	return out
}

// clock is t in UTC as the time of day (12:04:05Z), or in full
// (2026-07-02T12:04:05Z) when it falls on another day than now.
func clock(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.YearDay() == now.YearDay() && t.Year() == now.Year() {
		return t.Format("15:04:05Z07:00")
	}
	return t.Format(time.RFC3339)
}

// handlerETA extrapolates the rollout's rate since it started.
func handlerETA(h *v1.HandlerRolloutStatus, now time.Time) time.Duration {
	if h.StartedAt == nil || h.UpdatedPods <= 1 || h.UpdatedPods >= h.DesiredPods || h.Paused {
		return 0
	}
	elapsed := now.Sub(h.StartedAt.Time)
	return time.Duration(float64(elapsed) / float64(h.UpdatedPods) * float64(h.DesiredPods-h.UpdatedPods))
}

// workloadLines are the workload-update lines, by actor.
func workloadLines(s Snapshot) []string {
	st := s.KubeVirt.Status
	w := st.WorkloadUpdates
	if w == nil {
		return nil
	}
	switch w.Actor {
	case v1.ActorVirtController:
		n := "?"
		if st.OutdatedVirtualMachineInstanceWorkloads != nil {
			n = fmt.Sprint(*st.OutdatedVirtualMachineInstanceWorkloads)
		}
		return []string{"Workload updates (virt-controller moves the VMs)", "  outdated " + n}
	case v1.ActorNone:
		return []string{"Workload updates: none set (VMs are not moved)", fmt.Sprintf("  outdated %d", w.Outdated)}
	}
	moved := w.MigrationsCreated + w.Evicted
	total := moved + w.Outdated - w.MigrationsInFlight
	out := []string{"Workload updates (virt-operator)",
		fmt.Sprintf("  %s moved  outdated %d, in flight %d, waiting %d to migrate and %d to evict", Bar(moved, total), w.Outdated,
			w.MigrationsInFlight, w.WaitingForMigration, w.WaitingForEviction)}
	var extra []string
	if c := w.Choices; c != nil && (c.Leave > 0 || c.Invalid > 0) {
		extra = append(extra, fmt.Sprintf("%d left alone by their choice", c.Leave+c.Invalid))
	}
	if w.BackingOff > 0 {
		extra = append(extra, fmt.Sprintf("%d backing off", w.BackingOff))
	}
	if w.NeedsAttention > 0 {
		extra = append(extra, fmt.Sprintf("%d need attention (%s)", w.NeedsAttention, strings.Join(w.NeedsAttentionVMIs, ", ")))
	}
	if w.NotMovable > 0 {
		extra = append(extra, fmt.Sprintf("%d not movable (%s)", w.NotMovable, strings.Join(w.NotMovableVMIs, ", ")))
	}
	if w.Blocked != "" {
		extra = append(extra, "waiting: "+w.Blocked)
	}
	if eta := drainETA(s.KubeVirt, moved, s.Now); eta > 0 {
		extra = append(extra, "ETA "+eta.Round(time.Second).String())
	}
	if len(extra) > 0 {
		out = append(out, "  "+strings.Join(extra, "; "))
	}
	return out
}

// drainETA extrapolates the moves since the deployment finished (the gate opened).
func drainETA(kv *v1.KubeVirt, moved int, now time.Time) time.Duration {
	w := kv.Status.WorkloadUpdates
	if len(kv.Status.History) == 0 || moved == 0 || w.Outdated == 0 {
		return 0
	}
	r := kv.Status.History[0]
	if r.DeploymentID != w.DeploymentID || r.FinishedAt == nil {
		return 0
	}
	elapsed := now.Sub(r.FinishedAt.Time)
	return time.Duration(float64(elapsed) / float64(moved) * float64(w.Outdated-leftAlone(w.Choices)-w.NeedsAttention-w.NotMovable))
}

// leftAlone counts the outdated VMIs no one moves by their own choice.
func leftAlone(c *v1.WorkloadUpdateChoices) int {
	if c == nil {
		return 0
	}
	return c.Leave + c.Invalid
}

func historyLine(r v1.DeploymentRecord, now time.Time) string {
	took := ""
	if r.FinishedAt != nil {
		took = " in " + r.FinishedAt.Sub(r.StartedAt.Time).Round(time.Second).String()
	} else {
		took = " for " + now.Sub(r.StartedAt.Time).Round(time.Second).String()
	}
	l := fmt.Sprintf("%s -> %s  %s%s (started %s)", orDash(r.FromVersion), r.ToVersion, r.Outcome, took, r.StartedAt.UTC().Format(time.RFC3339))
	var phases []string
	for _, p := range r.Phases {
		if p.Seconds != nil {
			phases = append(phases, fmt.Sprintf("%s %ds", p.Name, *p.Seconds))
		} else {
			phases = append(phases, p.Name+" ...")
		}
	}
	if len(phases) > 0 {
		l += "\n      " + strings.Join(phases, ", ")
	}
	if r.VMIsMigrated+r.VMIsEvicted > 0 {
		l += fmt.Sprintf("\n      VMIs migrated %d, evicted %d", r.VMIsMigrated, r.VMIsEvicted)
	}
	if r.LastProblem != "" {
		l += "\n      last problem: " + r.LastProblem
	}
	return l
}

func conditionSummary(kv *v1.KubeVirt) string {
	var parts []string
	for _, t := range []v1.KubeVirtConditionType{v1.KubeVirtConditionReady, v1.KubeVirtConditionReconciling, v1.KubeVirtConditionStalled} {
		for _, c := range kv.Status.Conditions {
			if c.Type == t && c.Status == "True" {
				parts = append(parts, string(t))
			}
		}
	}
	return strings.Join(parts, " ")
}

// problem is the message of a Degraded condition that is not upstream's
// "update in progress".
func problem(kv *v1.KubeVirt) string {
	if !Degraded(kv) {
		return ""
	}
	for _, c := range kv.Status.Conditions {
		if c.Type == v1.KubeVirtConditionDegraded && c.Status == "True" {
			return c.Reason + ": " + c.Message
		}
	}
	return ""
}

func imageTag(cs []corev1.Container) string {
	if len(cs) == 0 {
		return ""
	}
	img := cs[0].Image
	if i := strings.LastIndexAny(img, ":@"); i >= 0 {
		return img[i+1:]
	}
	return img
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return orDash(id)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
