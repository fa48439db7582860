package rollout

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apiv1 "github.com/virt-operator/virt-operator/api/v1"
)

// The data-plane checks' progress in status.handlerRollout, both ways.

func checkStatus(results []CheckResult) []apiv1.HandlerDataPlaneCheck {
	var out []apiv1.HandlerDataPlaneCheck
	for _, r := range results {
		out = append(out, apiv1.HandlerDataPlaneCheck{Name: string(r.Name), State: string(r.State), VMI: r.VMI, Message: r.Message,
			StartedAt: timePtr(r.StartedAt), Deadline: timePtr(r.Deadline), FinishedAt: timePtr(r.FinishedAt)})
	}
	return out
}

func watchedStatus(ws []WatchedVMI) []apiv1.HandlerWatchedVMI {
	var out []apiv1.HandlerWatchedVMI
	for _, w := range ws {
		out = append(out, apiv1.HandlerWatchedVMI{Namespace: w.Namespace, Name: w.Name, UID: w.UID, Node: w.Node})
	}
	return out
}

func probeStatus(p *ProbeState) *apiv1.HandlerMigrationProbeStatus {
	if p == nil {
		return nil
	}
	out := &apiv1.HandlerMigrationProbeStatus{VMI: p.VMI(), VMIUID: p.UID, Node: p.Node}
	for _, m := range p.Moves {
		out.Moves = append(out.Moves, apiv1.HandlerProbeMove{Direction: string(m.Direction), Migration: m.Migration, Phase: m.Phase,
			CreatedAt: timePtr(m.CreatedAt), From: m.From, To: m.To})
	}
	return out
}

// checksFromStatus reads the checks' progress back.
func checksFromStatus(s *apiv1.HandlerRolloutStatus) Checks {
	var c Checks
	for _, r := range s.DataPlaneChecks {
		c.Results = append(c.Results, CheckResult{Name: CheckName(r.Name), State: CheckState(r.State), VMI: r.VMI, Message: r.Message,
			StartedAt: timeOf(r.StartedAt), Deadline: timeOf(r.Deadline), FinishedAt: timeOf(r.FinishedAt)})
	}
	for _, w := range s.CanaryVMIs {
		c.Watched = append(c.Watched, WatchedVMI{Namespace: w.Namespace, Name: w.Name, UID: w.UID, Node: w.Node})
	}
	if p := s.MigrationProbe; p != nil {
		ns, name := splitName(p.VMI)
		c.Probe = &ProbeState{Namespace: ns, Name: name, UID: p.VMIUID, Node: p.Node}
		for _, m := range p.Moves {
			c.Probe.Moves = append(c.Probe.Moves, ProbeMove{Direction: Direction(m.Direction), Migration: m.Migration, Phase: m.Phase,
				CreatedAt: timeOf(m.CreatedAt), From: m.From, To: m.To})
		}
	}
	return c
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// splitName splits namespace/name.
func splitName(s string) (namespace, name string) {
	if ns, n, ok := strings.Cut(s, "/"); ok {
		return ns, n
	}
	return "", s
}

// sameCheckStatus: a and b have the same checks in the same states, and the
// probe the same migrations in the same phases. A change of either is
// written at once, as a phase change is: it is what the checks decided, and
// the probe's migrations are named from it.
func sameCheckStatus(a, b apiv1.HandlerRolloutStatus) bool {
	if len(a.DataPlaneChecks) != len(b.DataPlaneChecks) || len(a.CanaryVMIs) != len(b.CanaryVMIs) ||
		(a.MigrationProbe == nil) != (b.MigrationProbe == nil) {
		return false
	}
	for i := range a.DataPlaneChecks {
		if a.DataPlaneChecks[i].Name != b.DataPlaneChecks[i].Name || a.DataPlaneChecks[i].State != b.DataPlaneChecks[i].State {
			return false
		}
	}
	if a.MigrationProbe == nil {
		return true
	}
	pa, pb := a.MigrationProbe, b.MigrationProbe
	if pa.VMI != pb.VMI || len(pa.Moves) != len(pb.Moves) {
		return false
	}
	for i := range pa.Moves {
		if pa.Moves[i].Migration != pb.Moves[i].Migration || pa.Moves[i].Phase != pb.Moves[i].Phase {
			return false
		}
	}
	return true
}

// sameChecks: the same as far as sameCheckStatus looks (progress, for the deadline).
func sameChecks(a, b State) bool {
	return sameCheckStatus(apiv1.HandlerRolloutStatus{DataPlaneChecks: checkStatus(a.Checks.Results), MigrationProbe: probeStatus(a.Checks.Probe),
		CanaryVMIs: watchedStatus(a.Checks.Watched)},
		apiv1.HandlerRolloutStatus{DataPlaneChecks: checkStatus(b.Checks.Results), MigrationProbe: probeStatus(b.Checks.Probe),
			CanaryVMIs: watchedStatus(b.Checks.Watched)})
}
