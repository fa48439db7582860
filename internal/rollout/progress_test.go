package rollout

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apiv1 "github.com/virt-operator/virt-operator/api/v1"
)

func TestHoldProgress(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	started := metav1.NewTime(now.Add(-time.Minute))
	base := apiv1.HandlerRolloutStatus{Phase: string(PhaseWaiting), DesiredPods: 200, UpdatedPods: 40, ReadyPods: 38,
		CanaryPod: "virt-handler-a", CanaryNode: "node-000", StartedAt: &started, PhaseChangeAt: &started, TargetID: "id", Message: "38 of 200"}
	progressed := base
	progressed.UpdatedPods, progressed.ReadyPods, progressed.Message = 50, 45, "45 of 200"
	newPhase := progressed
	newPhase.Phase = string(PhaseSuccessful)
	later := metav1.NewTime(now)
	newPhaseTime := progressed
	newPhaseTime.PhaseChangeAt = &later

	step := progressed // a tenth of the pods more: written
	step.UpdatedPods, step.ReadyPods = 60, 58
	fewerReady := base // a pod lost readiness: written
	fewerReady.ReadyPods = 30
	cases := []struct {
		name       string
		prev, next *apiv1.HandlerRolloutStatus
		lastWrite  time.Time
		hold       bool
		after      time.Duration
	}{
		{"progress of less than a step waits for the rest of the interval", &base, &progressed, now.Add(-300 * time.Millisecond), true, ProgressInterval - 300*time.Millisecond},
		{"progress an interval after the last write is written", &base, &progressed, now.Add(-ProgressInterval), false, 0},
		{"a tenth of the pods more is written at once", &base, &step, now.Add(-300 * time.Millisecond), false, 0},
		{"fewer ready pods are written at once", &base, &fewerReady, now.Add(-300 * time.Millisecond), false, 0},
		{"a phase change is never held", &base, &newPhase, now, false, 0},
		{"a new phase time is never held", &base, &newPhaseTime, now, false, 0},
		{"no write remembered (a restarted operator): written", &base, &progressed, time.Time{}, false, 0},
		{"nothing stored yet: written", nil, &progressed, now, false, 0},
		{"a clock that went back: written", &base, &progressed, now.Add(time.Second), false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hold, after := HoldProgress(tc.prev, tc.next, tc.lastWrite, now)
			if hold != tc.hold || after != tc.after {
				t.Fatalf("HoldProgress = %v, %v; want %v, %v", hold, after, tc.hold, tc.after)
			}
		})
	}
}
