package kubevirt

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/maintenance"
)

// Hold reasons (status.rolloutHold.reason and the Progressing condition's).
const (
	ReasonRolloutPaused         = "Paused"
	ReasonOutsideRolloutWindows = "OutsideRolloutWindows"
)

// rolloutHold is why the install or upgrade under way starts nothing new
// (spec.paused, or outside spec.rolloutWindows), or nil. At rest (observed ==
// target) nothing is held: repairing drift is not a rollout. A held rollout
// still keeps what runs: its certificates are renewed and drift is repaired.
func rolloutHold(s *scope) *v1.RolloutHoldStatus {
	observed, target := s.kv.Status.ObservedDeploymentID, s.kv.Status.TargetDeploymentID
	if s.cfg != nil {
		target = s.cfg.ID
	}
	if observed != "" && observed == target {
		return nil
	}
	spec := s.kv.Spec
	if spec.Paused {
		return &v1.RolloutHoldStatus{Reason: ReasonRolloutPaused, Message: "spec.paused is true: " + heldMeans}
	}
	w := maintenance.Evaluate(spec.RolloutWindows, s.now)
	if w.Open {
		return nil
	}
	h := &v1.RolloutHoldStatus{Reason: ReasonOutsideRolloutWindows, Message: "outside spec.rolloutWindows: " + heldMeans}
	if !w.NextOpen.IsZero() {
		h.NextWindowOpen = &metav1.Time{Time: w.NextOpen.UTC()}
		h.Message += "; the next opens at " + w.NextOpen.UTC().Format(time.RFC3339)
		s.requeueAfter(max(w.NextOpen.Sub(s.now), time.Second))
	}
	if w.Err != nil {
		h.Message += "; " + w.Err.Error()
	}
	return h
}

// heldMeans is what a hold holds and what it never does.
const heldMeans = "steps in flight finish, nothing new starts; certificates are renewed and drift is repaired"

// preflightHold holds the rollout on a preflight that fails or runs.
func preflightHold(message string) *v1.RolloutHoldStatus {
	return &v1.RolloutHoldStatus{Reason: ReasonPreflight, Message: message}
}
