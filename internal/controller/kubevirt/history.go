package kubevirt

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/history"
	"github.com/virt-operator/virt-operator/internal/preflight"
	"github.com/virt-operator/virt-operator/internal/rollout"
)

// recordHistory updates status.history from the status the pass concluded
// (st, every other field already decided).
func recordHistory(st *v1.KubeVirtStatus, s *scope, now time.Time) {
	obs := history.Observation{
		TargetID: st.TargetDeploymentID, TargetVersion: st.TargetKubeVirtVersion, ObservedVersion: st.ObservedKubeVirtVersion,
		ChangedKeys: s.changedKeys, WorkloadUpdates: st.WorkloadUpdates, Now: now,
		Done:  st.Phase == v1.KubeVirtPhaseDeployed && st.ObservedDeploymentID == st.TargetDeploymentID,
		Stage: stageOf(st, s),
	}
	if h := st.HandlerRollout; h != nil && h.TargetID == st.TargetDeploymentID && rollout.Phase(h.Phase) == rollout.PhaseFailed {
		obs.Failed = true
	}
	if d := findCondition(st.Conditions, v1.KubeVirtConditionDegraded); d != nil && d.Status == corev1.ConditionTrue && !notAProblem[d.Reason] {
		obs.Problem = d.Reason + ": " + d.Message
	}
	if pf := st.Preflight; pf != nil && pf.TargetID == st.TargetDeploymentID {
		for _, c := range pf.Checks {
			if c.State == preflight.Failed {
				obs.Problem = "preflight " + c.Name + " failed: " + c.Message
				break
			}
		}
	}
	st.History = history.Record(st.History, obs)
}

// notAProblem are the reasons upstream's Degraded carries during a healthy
// update (it is True with Progressing), a deletion, a hold the admin asked
// for, or a preflight (a failed check is recorded from status.preflight).
var notAProblem = map[string]bool{ReasonUpdating: true, ReasonDeploying: true, ReasonDeleting: true,
	ReasonRolloutPaused: true, ReasonOutsideRolloutWindows: true, ReasonPreflight: true}

// stageOf names where the rollout towards the target is; "" when the pass
// did not learn it (its strategy phase did not conclude).
func stageOf(st *v1.KubeVirtStatus, s *scope) string {
	switch {
	case s.strategies == nil:
		return ""
	case s.target == nil:
		return history.StageInstallStrategy
	}
	h := st.HandlerRollout
	if h == nil || h.TargetID != st.TargetDeploymentID {
		return history.StageApplying
	}
	switch rollout.Phase(h.Phase) {
	case rollout.PhaseStarted, rollout.PhaseCanary:
		return history.StageHandlerCanary
	case rollout.PhaseVerifying:
		return history.StageHandlerChecks
	case rollout.PhaseIncreasing, rollout.PhaseWaiting:
		return history.StageHandlerRollout
	case rollout.PhaseSuccessful:
		return history.StageControlPlane
	}
	return history.StageApplying
}
