package kubevirt

import (
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/history"
	"github.com/virt-operator/virt-operator/internal/rollout"
)

// recordHistory updates status.history from what this pass concluded: the
// stage is read from the status the pass wrote.
func recordHistory(kv *v1.KubeVirt, changed []string, strategyLoaded bool, now time.Time) {
	st := &kv.Status
	obs := history.Observation{
		TargetID: st.TargetDeploymentID, TargetVersion: st.TargetKubeVirtVersion, ObservedVersion: st.ObservedKubeVirtVersion,
		ChangedKeys: changed, WorkloadUpdates: st.WorkloadUpdates, Now: now,
		Done:  st.Phase == v1.KubeVirtPhaseDeployed && st.ObservedDeploymentID == st.TargetDeploymentID,
		Stage: stageOf(kv, strategyLoaded),
	}
	if h := st.HandlerRollout; h != nil && h.TargetID == st.TargetDeploymentID && rollout.Phase(h.Phase) == rollout.PhaseFailed {
		obs.Failed = true
	}
	if d := findCondition(st.Conditions, v1.KubeVirtConditionDegraded); d != nil && d.Status == "True" && !notAProblem[d.Reason] {
		obs.Problem = d.Reason + ": " + d.Message
	}
	if pf := st.Preflight; pf != nil && pf.TargetID == st.TargetDeploymentID {
		for _, c := range pf.Checks {
			if c.State == "Failed" {
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

// stageOf names where the rollout towards the target is.
func stageOf(kv *v1.KubeVirt, strategyLoaded bool) string {
	if !strategyLoaded {
		return history.StageInstallStrategy
	}
	h := kv.Status.HandlerRollout
	if h == nil || h.TargetID != kv.Status.TargetDeploymentID {
		return history.StageApplying
	}
	switch rollout.Phase(h.Phase) {
	case rollout.PhaseStarted, rollout.PhaseCanary:
		return history.StageHandlerCanary
	case rollout.PhaseIncreasing, rollout.PhaseWaiting:
		return history.StageHandlerRollout
	case rollout.PhaseSuccessful:
		return history.StageControlPlane
	}
	return history.StageApplying
}
