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
// target) nothing is held: repairing drift is not a rollout.
func rolloutHold(kv *v1.KubeVirt, now time.Time) *v1.RolloutHoldStatus {
	st := kv.Status
	if st.ObservedDeploymentID != "" && st.ObservedDeploymentID == st.TargetDeploymentID {
		return nil
	}
	if kv.Spec.Paused {
		return &v1.RolloutHoldStatus{Reason: ReasonRolloutPaused,
			Message: "spec.paused is true: steps in flight finish, nothing new starts"}
	}
	w := maintenance.Evaluate(kv.Spec.RolloutWindows, now)
	if w.Open {
		return nil
	}
	h := &v1.RolloutHoldStatus{Reason: ReasonOutsideRolloutWindows, Message: "outside spec.rolloutWindows: steps in flight finish, nothing new starts"}
	if !w.NextOpen.IsZero() {
		h.NextWindowOpen = &metav1.Time{Time: w.NextOpen.UTC()}
		h.Message += "; the next opens at " + w.NextOpen.UTC().Format(time.RFC3339)
	}
	if w.Err != nil {
		h.Message += "; " + w.Err.Error()
	}
	return h
}

// holdRequeue is when a held rollout looks again by itself: when the next
// window opens (a spec change ends a pause, and brings an event).
func holdRequeue(h *v1.RolloutHoldStatus, now time.Time) time.Duration {
	if h == nil || h.NextWindowOpen == nil {
		return 0
	}
	return max(h.NextWindowOpen.Sub(now), time.Second)
}
