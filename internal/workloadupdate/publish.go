package workloadupdate

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// CountsInterval is how often status.workloadUpdates is rewritten while only its
// gauges move (migrations in flight, VMIs waiting, outdated, backing off, the
// choices' counts). Every migration in the cluster moves them, the ones this
// operator did not start too: at 10,000 VMIs, a patch of the KubeVirt CR for
// each would cost the API server more than the migrations themselves. What
// this operator did (migrations created, evictions, a batch's time) and why it
// waits (blocked, paused, the window, VMIs needing attention) are never held.
const CountsInterval = 5 * time.Second

// HoldCounts says whether next may wait instead of being written now: it
// differs from prev in gauges only and the last write was less than
// CountsInterval ago. after is when the held status is due.
func HoldCounts(prev, next *v1.WorkloadUpdatesStatus, lastWrite, now time.Time) (hold bool, after time.Duration) {
	if prev == nil || next == nil || !sameButGauges(*prev, *next) {
		return false, 0
	}
	since := now.Sub(lastWrite)
	if lastWrite.IsZero() || since < 0 || since >= CountsInterval {
		return false, 0
	}
	return true, CountsInterval - since
}

// sameButGauges: a and b differ in nothing but the counts that follow the
// cluster's migrations rather than this operator's actions.
func sameButGauges(a, b v1.WorkloadUpdatesStatus) bool {
	for _, s := range []*v1.WorkloadUpdatesStatus{&a, &b} {
		s.MigrationsInFlight, s.WaitingForMigration, s.WaitingForEviction = 0, 0, 0
		s.Outdated, s.BackingOff, s.Choices = 0, 0, nil
	}
	return equality.Semantic.DeepEqual(a, b)
}
