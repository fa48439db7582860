package kubevirt

import (
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/maintenance"
)

// Hold reasons (status.rolloutHold.reason and the Progressing condition's).
const (
	ReasonRolloutPaused         = "Paused"
	ReasonOutsideRolloutWindows = "OutsideRolloutWindows"
)

// holdResult is what the hold phase concluded: why the install or upgrade
// under way starts nothing new (an empty reason: nothing holds it), the next
// window's opening, and the step a held rollout stopped at (found by the
// object phase). nextStatus turns it into status.rolloutHold.
type holdResult struct {
	reason, message string
	nextWindow      time.Time
	step            string
}

// held: something holds the rollout.
func (h *holdResult) held() bool { return h != nil && h.reason != "" }

// status is the hold as status.rolloutHold records it; nil when nothing holds.
func (h *holdResult) status() *v1.RolloutHoldStatus {
	if !h.held() {
		return nil
	}
	st := &v1.RolloutHoldStatus{Reason: h.reason, Message: h.message, Step: h.step}
	if !h.nextWindow.IsZero() {
		st.NextWindowOpen = timePtr(h.nextWindow.UTC())
	}
	return st
}

// rolloutHold is why the install or upgrade under way starts nothing new
// (spec.paused, or outside spec.rolloutWindows), and when to look again (the
// next window's opening). At rest (observed == target) nothing is held:
// repairing drift is not a rollout. A held rollout still keeps what runs: its
// certificates are renewed and drift is repaired.
func rolloutHold(kv *v1.KubeVirt, targetID string, now time.Time) (*holdResult, time.Duration) {
	observed := kv.Status.ObservedDeploymentID
	if targetID == "" {
		targetID = kv.Status.TargetDeploymentID
	}
	if observed != "" && observed == targetID {
		return &holdResult{}, 0
	}
	spec := kv.Spec
	if spec.Paused {
		return &holdResult{reason: ReasonRolloutPaused, message: "spec.paused is true: " + heldMeans}, 0
	}
	w := maintenance.Evaluate(spec.RolloutWindows, now)
	if w.Open {
		return &holdResult{}, 0
	}
	h := &holdResult{reason: ReasonOutsideRolloutWindows, message: "outside spec.rolloutWindows: " + heldMeans}
	var requeue time.Duration
	if !w.NextOpen.IsZero() {
		h.nextWindow = w.NextOpen
		h.message += "; the next opens at " + w.NextOpen.UTC().Format(time.RFC3339)
		requeue = max(w.NextOpen.Sub(now), time.Second)
	}
	if w.Err != nil {
		h.message += "; " + w.Err.Error()
	}
	return h, requeue
}

// heldMeans is what a hold holds and what it never does.
const heldMeans = "steps in flight finish, nothing new starts; certificates are renewed and drift is repaired"

// preflightHold holds the rollout on a preflight that fails or runs.
func preflightHold(message string) *holdResult {
	return &holdResult{reason: ReasonPreflight, message: message}
}
