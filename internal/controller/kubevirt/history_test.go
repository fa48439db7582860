package kubevirt

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// A preflight that runs, or a pause, is no problem of the deployment; a failed
// preflight check is.
func TestRecordHistoryProblems(t *testing.T) {
	now := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	upgrading := func(reason string) *v1.KubeVirtStatus {
		return &v1.KubeVirtStatus{ObservedDeploymentID: "a", TargetDeploymentID: "b", TargetKubeVirtVersion: "v2",
			Conditions: []v1.KubeVirtCondition{{Type: v1.KubeVirtConditionDegraded, Status: corev1.ConditionTrue, Reason: reason, Message: "m"}}}
	}
	loaded := &scope{target: &deployment{}}
	for _, reason := range []string{ReasonPreflight, ReasonRolloutPaused, ReasonUpdating} {
		kv := upgrading(reason)
		recordHistory(kv, loaded, now)
		if p := kv.History[0].LastProblem; p != "" {
			t.Errorf("%s recorded as a problem: %q", reason, p)
		}
	}
	kv := upgrading(ReasonPreflight)
	kv.Preflight = &v1.PreflightStatus{TargetID: "b", Checks: []v1.PreflightCheck{{Name: "ImagePull", State: "Failed", Message: "no such tag"}}}
	recordHistory(kv, loaded, now)
	if p := kv.History[0].LastProblem; !strings.HasPrefix(p, "preflight ImagePull failed: no such tag") {
		t.Errorf("a failed preflight: %q", p)
	}
	kv = upgrading(ReasonHandlerRolloutFailed)
	recordHistory(kv, loaded, now)
	if p := kv.History[0].LastProblem; p != ReasonHandlerRolloutFailed+": m" {
		t.Errorf("a failed rollout: %q", p)
	}
}
