package rollout

import (
	"time"

	apiv1 "github.com/virt-operator/virt-operator/api/v1"
)

// While only its progress moves (pod counts, the message),
// status.handlerRollout is rewritten once a ProgressSteps-th more of the pods
// are updated or ready than it says, and at least every ProgressInterval: a
// rollout writes its progress about a dozen times whatever its size. The
// pods change many times a second; a write a second was 75 patches of the
// KubeVirt CR in a 1000-node fast step, costing the API server more than it
// told anyone and slowing the very DaemonSet rollout it reports on. A phase
// change, a node starting or ending a wait, and a data-plane check moving on
// are never held back.
const (
	ProgressSteps    = 10
	ProgressInterval = 30 * time.Second
)

// HoldProgress says whether next may wait instead of being written now: it
// differs from prev only in progress, by less than a step of pods, and the
// last write was less than ProgressInterval ago. after is when the held
// status is due.
func HoldProgress(prev, next *apiv1.HandlerRolloutStatus, lastWrite, now time.Time) (hold bool, after time.Duration) {
	if prev == nil || next == nil || !sameButProgress(*prev, *next) {
		return false, 0
	}
	step := max(next.DesiredPods/ProgressSteps, 1)
	if next.UpdatedPods-prev.UpdatedPods >= step || next.ReadyPods-prev.ReadyPods >= step ||
		next.UpdatedPods < prev.UpdatedPods || next.ReadyPods < prev.ReadyPods {
		return false, 0
	}
	since := now.Sub(lastWrite)
	if lastWrite.IsZero() || since < 0 || since >= ProgressInterval {
		return false, 0
	}
	return true, ProgressInterval - since
}

// sameButProgress: a and b differ in nothing but counts and message.
func sameButProgress(a, b apiv1.HandlerRolloutStatus) bool {
	return a.Phase == b.Phase && a.CanaryPod == b.CanaryPod && a.CanaryNode == b.CanaryNode &&
		a.TargetID == b.TargetID && a.StartedAt.Equal(b.StartedAt) && a.PhaseChangeAt.Equal(b.PhaseChangeAt) &&
		sameWaitStatus(a, b) && sameCheckStatus(a, b)
}

// sameWaitStatus: a and b list the same nodes waiting for migrations. A node
// starting or ending a wait is written at once, as a phase change is: it says
// why a pod is not replaced, and the migration watch reads it.
func sameWaitStatus(a, b apiv1.HandlerRolloutStatus) bool {
	if a.NodesWaitingForMigrations != b.NodesWaitingForMigrations || len(a.MigrationWaits) != len(b.MigrationWaits) {
		return false
	}
	for i := range a.MigrationWaits {
		if a.MigrationWaits[i].Node != b.MigrationWaits[i].Node || a.MigrationWaits[i].Migration != b.MigrationWaits[i].Migration {
			return false
		}
	}
	return true
}
