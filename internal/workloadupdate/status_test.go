package workloadupdate

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/maintenance"
)

func TestNextStatus(t *testing.T) {
	at := t0.Add(time.Minute)
	plan := Plan{ActiveMigrations: 2, Migrate: make([]MigrationRequest, 3), WaitingMigrate: 10,
		Evict: make([]*VMI, 4), WaitingEvict: 6}
	prev := &v1.WorkloadUpdatesStatus{DeploymentID: "a", MigrationsCreated: 7, Evicted: 1,
		LastEvictionBatch: &metav1.Time{Time: t0}}
	tests := []struct {
		name    string
		prev    *v1.WorkloadUpdatesStatus
		target  string
		done    Done
		blocked string
		want    v1.WorkloadUpdatesStatus
	}{
		{"first look", nil, "a", Done{}, "", v1.WorkloadUpdatesStatus{DeploymentID: "a",
			MigrationsInFlight: 2, WaitingForMigration: 13, WaitingForEviction: 10}},
		{"counters add up", prev, "a", Done{Created: 3, Evicted: 3, EvictionBatchAt: &at}, "",
			v1.WorkloadUpdatesStatus{DeploymentID: "a", MigrationsCreated: 10, Evicted: 4,
				MigrationsInFlight: 5, WaitingForMigration: 10, WaitingForEviction: 7,
				LastEvictionBatch: &metav1.Time{Time: at}}},
		{"a new target restarts the counters, keeps the batch time", prev, "b", Done{}, "",
			v1.WorkloadUpdatesStatus{DeploymentID: "b", MigrationsInFlight: 2, WaitingForMigration: 13,
				WaitingForEviction: 10, LastEvictionBatch: &metav1.Time{Time: t0}}},
		{"blocked says why", prev, "a", Done{}, "upgrading", v1.WorkloadUpdatesStatus{DeploymentID: "a",
			MigrationsCreated: 7, Evicted: 1, MigrationsInFlight: 2, WaitingForMigration: 13,
			WaitingForEviction: 10, LastEvictionBatch: &metav1.Time{Time: t0}, Blocked: "upgrading"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NextStatus(tt.prev, Report{TargetID: tt.target, Blocked: tt.blocked}, plan, tt.done)
			if got.LastEvictionBatch != nil && tt.want.LastEvictionBatch != nil &&
				got.LastEvictionBatch.Equal(tt.want.LastEvictionBatch) {
				got.LastEvictionBatch = tt.want.LastEvictionBatch
			}
			if !equality.Semantic.DeepEqual(*got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestNextStatusReportsChoicesAttentionAndWindow(t *testing.T) {
	names := make([]Attention, 12)
	for i := range names {
		names[i] = Attention{Key: Key{"ns", fmt.Sprintf("vm-%02d", i)}, Failures: 3}
	}
	next := t0.Add(time.Hour + 300*time.Millisecond)
	plan := Plan{Outdated: 20, Choices: v1.WorkloadUpdateChoices{LiveMigrate: 5, Evict: 2, Leave: 13},
		BackingOff: 1, NeedsAttention: names, Hold: "outside the maintenance windows",
		Window: maintenance.State{Windows: 1, NextOpen: next}}
	got := NextStatus(nil, Report{TargetID: "a", Actor: v1.ActorVirtOperator, Paused: false}, plan, Done{})
	if got.Actor != v1.ActorVirtOperator || got.Outdated != 20 || *got.Choices != plan.Choices || got.BackingOff != 1 {
		t.Errorf("counts: %+v", got)
	}
	if got.NeedsAttention != 12 || len(got.NeedsAttentionVMIs) != maxNamed || got.NeedsAttentionVMIs[0] != "ns/vm-00" {
		t.Errorf("attention: %d %v", got.NeedsAttention, got.NeedsAttentionVMIs)
	}
	if got.Window == nil || got.Window.Open || !got.Window.NextOpen.Time.Equal(t0.Add(time.Hour)) {
		t.Errorf("window: %+v", got.Window)
	}
	if got.Blocked != plan.Hold {
		t.Errorf("blocked %q, want the hold %q", got.Blocked, plan.Hold)
	}
	// A gate reason wins over the hold; no windows, no window status.
	got = NextStatus(nil, Report{TargetID: "a", Blocked: "upgrading"}, Plan{Hold: "paused"}, Done{})
	if got.Blocked != "upgrading" || got.Window != nil || got.Choices != nil {
		t.Errorf("gated: %+v", got)
	}
}

func TestBatchTimeRoundsUp(t *testing.T) {
	for _, tt := range []struct {
		at, want time.Time
	}{
		{t0, t0},
		{t0.Add(time.Nanosecond), t0.Add(time.Second)},
		{t0.Add(999 * time.Millisecond), t0.Add(time.Second)},
		{t0.Add(time.Second).In(time.FixedZone("X", 3600)), t0.Add(time.Second)},
	} {
		got := BatchTime(tt.at)
		if !got.Time.Equal(tt.want) || got.Location() != time.UTC {
			t.Errorf("BatchTime(%s) = %s, want %s in UTC", tt.at, got.Time, tt.want)
		}
		// An operator restarted from the stored time never evicts early.
		if got.Time.Before(tt.at) {
			t.Errorf("BatchTime(%s) = %s is earlier than the batch", tt.at, got.Time)
		}
	}
}
