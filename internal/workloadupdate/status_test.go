package workloadupdate

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func TestNextStatus(t *testing.T) {
	at := t0.Add(time.Minute)
	plan := Plan{ActiveMigrations: 2, Migrate: make([]MigrationRequest, 3), WaitingMigrate: 10,
		Evict: make([]*v1.VirtualMachineInstance, 4), WaitingEvict: 6}
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
			got := NextStatus(tt.prev, tt.target, plan, tt.done, tt.blocked)
			if got.LastEvictionBatch != nil && tt.want.LastEvictionBatch != nil &&
				got.LastEvictionBatch.Equal(tt.want.LastEvictionBatch) {
				got.LastEvictionBatch = tt.want.LastEvictionBatch
			}
			if *got != tt.want {
				t.Fatalf("got %+v\nwant %+v", *got, tt.want)
			}
		})
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
