package workloadupdate

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func TestHoldCounts(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	base := v1.WorkloadUpdatesStatus{DeploymentID: "id", Actor: v1.ActorVirtOperator, Outdated: 10, MigrationsInFlight: 2,
		WaitingForMigration: 8, MigrationsCreated: 2, Choices: &v1.WorkloadUpdateChoices{}}
	with := func(change func(*v1.WorkloadUpdatesStatus)) *v1.WorkloadUpdatesStatus {
		s := base.DeepCopy()
		change(s)
		return s
	}
	gauges := with(func(s *v1.WorkloadUpdatesStatus) {
		s.Outdated, s.MigrationsInFlight, s.WaitingForMigration, s.WaitingForEviction, s.BackingOff = 9, 3, 6, 1, 1
		s.Choices = nil
	})
	for _, c := range []struct {
		name      string
		prev      *v1.WorkloadUpdatesStatus
		next      *v1.WorkloadUpdatesStatus
		lastWrite time.Time
		hold      bool
		after     time.Duration
	}{
		{"gauges only, written 1 s ago", &base, gauges, t0.Add(-time.Second), true, CountsInterval - time.Second},
		{"gauges only, written an interval ago", &base, gauges, t0.Add(-CountsInterval), false, 0},
		{"gauges only, never written by this process", &base, gauges, time.Time{}, false, 0},
		{"gauges only, a write in the future (clock skew)", &base, gauges, t0.Add(time.Second), false, 0},
		{"nothing written yet", nil, gauges, t0, false, 0},
		{"no next", &base, nil, t0, false, 0},
		{"a migration this operator created", &base, with(func(s *v1.WorkloadUpdatesStatus) { s.MigrationsCreated++ }), t0, false, 0},
		{"an eviction", &base, with(func(s *v1.WorkloadUpdatesStatus) { s.Evicted++ }), t0, false, 0},
		{"an eviction batch", &base, with(func(s *v1.WorkloadUpdatesStatus) { s.LastEvictionBatch = &metav1.Time{Time: t0} }), t0, false, 0},
		{"blocked", &base, with(func(s *v1.WorkloadUpdatesStatus) { s.Blocked = "paused" }), t0, false, 0},
		{"paused", &base, with(func(s *v1.WorkloadUpdatesStatus) { s.Paused = true }), t0, false, 0},
		{"a new target", &base, with(func(s *v1.WorkloadUpdatesStatus) { s.DeploymentID = "next" }), t0, false, 0},
		{"a VMI needs attention", &base, with(func(s *v1.WorkloadUpdatesStatus) {
			s.NeedsAttention, s.NeedsAttentionVMIs = 1, []string{"ns/vm"}
		}), t0, false, 0},
		{"the window closed", &base, with(func(s *v1.WorkloadUpdatesStatus) { s.Window = &v1.WorkloadUpdateWindowStatus{} }), t0, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			hold, after := HoldCounts(c.prev, c.next, c.lastWrite, t0)
			if hold != c.hold || after != c.after {
				t.Errorf("HoldCounts = %v, %v; want %v, %v", hold, after, c.hold, c.after)
			}
		})
	}
	if base.Outdated != 10 || base.Choices == nil {
		t.Error("HoldCounts changed its input")
	}
}
