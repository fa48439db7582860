package workloadupdate

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Done is what the shell carried out of a plan.
type Done struct {
	// Created and Evicted count the migrations created and the evictions accepted.
	Created, Evicted int
	// EvictionBatchAt is when the batch was sent; nil when none was.
	EvictionBatchAt *time.Time
}

// Report is what status says beside the plan's counts.
type Report struct {
	TargetID string
	Actor    v1.WorkloadUpdateActor
	Paused   bool
	// Blocked says why the updater does not act now (empty when it may).
	Blocked string
}

// maxNamed is how many VMIs needing attention status names.
const maxNamed = 10

// NextStatus is status.workloadUpdates after one reconcile towards r.TargetID.
// The counters start again when the target changes; the last eviction batch
// carries over, since the interval is about the cluster, not the deployment.
func NextStatus(prev *v1.WorkloadUpdatesStatus, r Report, p Plan, done Done) *v1.WorkloadUpdatesStatus {
	next := &v1.WorkloadUpdatesStatus{DeploymentID: r.TargetID, Actor: r.Actor, Paused: r.Paused, Blocked: r.Blocked}
	if prev != nil {
		next.LastEvictionBatch = prev.LastEvictionBatch
		if prev.DeploymentID == r.TargetID {
			next.MigrationsCreated, next.Evicted = prev.MigrationsCreated, prev.Evicted
		}
	}
	next.MigrationsCreated += done.Created
	next.Evicted += done.Evicted
	if done.EvictionBatchAt != nil {
		next.LastEvictionBatch = BatchTime(*done.EvictionBatchAt)
	}
	next.MigrationsInFlight = p.ActiveMigrations + done.Created
	next.WaitingForMigration = p.WaitingMigrate + len(p.Migrate) - done.Created
	next.WaitingForEviction = p.WaitingEvict + len(p.Evict) - done.Evicted
	next.Outdated = p.Outdated
	if p.Outdated > 0 {
		choices := p.Choices
		next.Choices = &choices
	}
	next.BackingOff = p.BackingOff
	next.NeedsAttention = len(p.NeedsAttention)
	for _, a := range p.NeedsAttention[:min(maxNamed, len(p.NeedsAttention))] {
		next.NeedsAttentionVMIs = append(next.NeedsAttentionVMIs, a.Key.String())
	}
	next.NotMovable = len(p.NotMovable)
	for _, u := range p.NotMovable[:min(maxNamed, len(p.NotMovable))] {
		next.NotMovableVMIs = append(next.NotMovableVMIs, u.Key.String()+": "+u.Reason)
	}
	if p.Window.Windows > 0 {
		next.Window = &v1.WorkloadUpdateWindowStatus{Open: p.Window.Open}
		if !p.Window.NextOpen.IsZero() {
			next.Window.NextOpen = &metav1.Time{Time: p.Window.NextOpen.UTC().Truncate(time.Second)}
		}
		if p.Window.Err != nil {
			next.Window.Error = p.Window.Err.Error()
		}
	}
	if next.Blocked == "" {
		next.Blocked = p.Hold
	}
	return next
}

// BatchTime is an eviction batch time as status stores it: whole seconds, the
// precision metav1.Time keeps, so a stored value compares equal to a fresh one.
// It rounds up: an operator restarted from the stored value waits at least the
// full interval, never up to a second less.
func BatchTime(at time.Time) *metav1.Time {
	at = at.UTC()
	whole := at.Truncate(time.Second)
	if whole.Before(at) {
		whole = whole.Add(time.Second)
	}
	return &metav1.Time{Time: whole}
}
