// Package history keeps status.history, the KubeVirt CR's record of its last
// deployments: each target the operator rolled out, when, from which version,
// through which stages and for how long, how it ended, and how many VMIs the
// workload updater moved for it. Record is a pure function from the previous
// record and what one reconcile observed to the next record; the KubeVirt
// controller calls it once per pass, so the history has one writer.
package history

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// MaxEntries bounds the history (status stays small).
const MaxEntries = 10

// Outcomes.
const (
	InProgress = "InProgress"
	Succeeded  = "Succeeded"
	// Failed: the rollout failed and was rolled back; it holds until retried
	// (then InProgress again) or replaced.
	Failed     = "Failed"
	Superseded = "Superseded"
)

// Stage names, in the order a deployment usually goes through them.
const (
	StageInstallStrategy = "InstallStrategy" // the strategy Job runs, or the cache is read
	StageApplying        = "Applying"        // objects written, components rolling over
	StageHandlerCanary   = "VirtHandlerCanary"
	StageHandlerChecks   = "VirtHandlerDataPlaneChecks" // the canary's data-plane checks, after its bake
	StageHandlerRollout  = "VirtHandlerRollout"         // the fast step
	StageControlPlane    = "ControlPlane"               // what rolls after virt-handler
)

// Observation is what one reconcile saw of the deployment towards TargetID.
type Observation struct {
	TargetID, TargetVersion string
	// ObservedVersion is what runs now (the "from" of a new target).
	ObservedVersion string
	ChangedKeys     []string
	// Stage is where the rollout is; empty once observed == target.
	Stage string
	// Done: observed == target.
	Done bool
	// Failed: the rollout failed and was rolled back (it holds for this target).
	Failed bool
	// Problem is why it cannot progress now, if it cannot.
	Problem string
	// WorkloadUpdates is status.workloadUpdates (its counts are per deployment ID).
	WorkloadUpdates *v1.WorkloadUpdatesStatus
	Now             time.Time
}

// Record returns the history after obs, newest first.
func Record(prev []v1.DeploymentRecord, obs Observation) []v1.DeploymentRecord {
	if obs.TargetID == "" {
		return prev
	}
	out := make([]v1.DeploymentRecord, len(prev))
	for i := range prev {
		prev[i].DeepCopyInto(&out[i])
	}
	now := metav1.NewTime(obs.Now.UTC().Truncate(time.Second))
	for i := range out {
		countMoves(&out[i], obs.WorkloadUpdates)
	}
	if len(out) == 0 || out[0].DeploymentID != obs.TargetID {
		if len(out) > 0 && out[0].Outcome == InProgress { // a Failed one stays Failed
			out[0].Outcome = Superseded
			finish(&out[0], now)
		}
		entry := v1.DeploymentRecord{DeploymentID: obs.TargetID, FromVersion: obs.ObservedVersion, ToVersion: obs.TargetVersion,
			ChangedKeys: obs.ChangedKeys, StartedAt: now, Outcome: InProgress}
		countMoves(&entry, obs.WorkloadUpdates)
		out = append([]v1.DeploymentRecord{entry}, out...)
	}
	cur := &out[0]
	if obs.Problem != "" {
		cur.LastProblem = obs.Problem
	}
	switch {
	case cur.Outcome == Succeeded:
	case obs.Done:
		cur.Outcome = Succeeded
		finish(cur, now)
	case obs.Failed:
		if cur.Outcome != Failed {
			cur.Outcome = Failed
			finish(cur, now)
		}
	default: // in progress, or retried after a failure
		cur.Outcome, cur.FinishedAt = InProgress, nil
		if obs.Stage != "" {
			enter(cur, obs.Stage, now)
		}
	}
	if len(out) > MaxEntries {
		out = out[:MaxEntries]
	}
	return out
}

// enter starts stage unless it is the current one; the previous stage's
// duration is then known.
func enter(r *v1.DeploymentRecord, stage string, now metav1.Time) {
	if n := len(r.Phases); n > 0 && r.Phases[n-1].Name == stage {
		return
	}
	closeLast(r, now)
	r.Phases = append(r.Phases, v1.DeploymentPhase{Name: stage, StartedAt: now})
}

func finish(r *v1.DeploymentRecord, now metav1.Time) {
	closeLast(r, now)
	r.FinishedAt = &now
}

func closeLast(r *v1.DeploymentRecord, now metav1.Time) {
	if n := len(r.Phases); n > 0 && r.Phases[n-1].Seconds == nil {
		s := int64(now.Sub(r.Phases[n-1].StartedAt.Time).Seconds())
		r.Phases[n-1].Seconds = &s
	}
}

// countMoves copies the workload updater's counts into the entry they belong to.
func countMoves(r *v1.DeploymentRecord, w *v1.WorkloadUpdatesStatus) {
	if w != nil && w.DeploymentID == r.DeploymentID {
		r.VMIsMigrated, r.VMIsEvicted = w.MigrationsCreated, w.Evicted
	}
}

// Duration is how long a finished deployment took, 0 while it runs.
func Duration(r v1.DeploymentRecord) time.Duration {
	if r.FinishedAt == nil {
		return 0
	}
	return r.FinishedAt.Sub(r.StartedAt.Time)
}
