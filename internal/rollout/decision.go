package rollout

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/virt-operator/virt-operator/api/v1"
)

// Event is a Kubernetes Event to emit on the KubeVirt CR (or the DaemonSet).
type Event struct {
	Type    string // "Normal" or "Warning"
	Reason  string
	Message string
}

// Event reasons.
const (
	ReasonFailedUpdate = "FailedUpdate" // Warning: a canary or updated pod crashed
	ReasonRolloutPhase = "HandlerRollout"
	// ReasonMigrationWaitExpired (Warning): a pod is replaced although a
	// migration from or to its node has not finished, past maxMigrationWait.
	ReasonMigrationWaitExpired = "HandlerMigrationWaitExpired"
	EventTypeNormal            = "Normal"
	EventTypeWarning           = "Warning"
)

// Decision is what the controller must do.
type Decision struct {
	Phase Phase
	// UpdateStrategy the DaemonSet must have; patch only if it differs
	// (SameStrategy). Nil: leave it as it is.
	UpdateStrategy *appsv1.DaemonSetUpdateStrategy
	// DeletePods are old pods to delete so the DaemonSet recreates them from the
	// new template (the canary, while OnDelete).
	DeletePods []string
	// Rollback: put the previous template back (and keep it while Failed).
	Rollback bool
	// RecordGeneration: record the DaemonSet's generation after patching.
	RecordGeneration bool
	// Done: the rollout needs nothing more.
	Done bool
	// LeftOut are the nodes, not Ready or gone, a Done rollout left out: their
	// pods cannot run the target until the node is back.
	LeftOut []string
	// Expired are the nodes among DeletePods' that an unfinished migration
	// still touches, past Policy.MaxMigrationWait: the controller warns of
	// each (ReasonMigrationWaitExpired).
	Expired []NodeWait
	// CleanupHeld: the rollout has succeeded, but dropping the settings
	// carried over (every pod replaced once more) waits while migrations hold
	// nodes (State.Waits): CleanupStrategy gives OnDelete.
	CleanupHeld bool
	// CreateMigration is the migration probe's next migration (AlreadyExists
	// means an earlier pass created it).
	CreateMigration *apiv1.VirtualMachineInstanceMigration
	// AbortMigrations are probe migrations to delete (abort): the failed
	// rollout's unfinished one, or an earlier rollout's.
	AbortMigrations []types.NamespacedName
	// Event to emit; set only when the phase changes.
	Event *Event
	// Degraded, when set, is the message of a Degraded condition.
	Degraded string
	// State to keep for the next Plan; Status is its status.handlerRollout form.
	State  State
	Status *apiv1.HandlerRolloutStatus
	// RequeueAfter: look again then even without an event (bake or deadline).
	RequeueAfter time.Duration
}

// hold is the Decision that changes nothing (used with an error).
func (pl *planner) hold() Decision {
	st := pl.prev
	return Decision{Phase: st.Phase, State: st, Status: pl.status(st)}
}

// idle is a finished rollout at rest; nodes that are not Ready stay left out
// (their pods follow when they are back), so the step stays rolled over.
func (pl *planner) idle() Decision {
	st := pl.prev
	return Decision{Phase: st.Phase, UpdateStrategy: Default(), Done: true, LeftOut: pl.v.leftOut, State: st, Status: pl.status(st)}
}

// finish fills the parts every Decision shares: times, event, deadline, status.
func (pl *planner) finish() Decision {
	d, st, now := pl.d, &pl.st, pl.obs.Now
	if st.Phase == PhaseFailed {
		d.Rollback = true
		d.UpdateStrategy = Default() // lets the DaemonSet replace the bad pods
		d.Degraded = st.Message
	}
	changed := st.Phase != pl.prev.Phase || pl.restarted
	if changed {
		st.PhaseChangeAt = now
		if d.Event == nil {
			d.Event = &Event{Type: EventTypeNormal, Reason: ReasonRolloutPhase + string(st.Phase),
				Message: fmt.Sprintf("virt-handler rollout %s: %s", st.Phase, st.Message)}
		}
	}
	if st.PhaseChangeAt.IsZero() {
		st.PhaseChangeAt = now
	}
	st.Paused = pl.obs.Paused && st.Phase.Active()
	st.Waits, st.WaitingNodes = nil, 0
	if st.Phase != PhaseFailed {
		st.Waits, st.WaitingNodes = sortedWaits(pl.waits), len(pl.waits)
	}
	if changed || st.ProgressAt.IsZero() || pl.v.updated > pl.prev.Updated || pl.v.updatedReady > pl.prev.Ready ||
		st.Paused != pl.prev.Paused || !sameWaits(pl.prev, *st) || !sameChecks(pl.prev, *st) {
		// A pause or a resume is progress, and so is a node starting or
		// ending a wait for a migration, and a data-plane check or probe
		// migration moving on: the deadline starts again.
		st.ProgressAt = now
	}
	st.Updated, st.Ready = pl.v.updated, pl.v.updatedReady
	for _, w := range st.Waits { // look again when the first wait ends, migration event or not
		if left := w.Until.Sub(now); left > 0 && (d.RequeueAfter == 0 || left < d.RequeueAfter) {
			d.RequeueAfter = left
		}
	}
	if st.Phase.Active() && !st.Paused && !pl.onlyMigrations {
		in := now.Sub(st.ProgressAt)
		if in >= pl.p.PhaseDeadline {
			d.Degraded = fmt.Sprintf("virt-handler rollout stuck in phase %s: no progress for %s: %s",
				st.Phase, in.Round(time.Second), st.Message)
		} else if left := pl.p.PhaseDeadline - in; d.RequeueAfter == 0 || left < d.RequeueAfter {
			d.RequeueAfter = left
		}
	}
	d.Phase = st.Phase
	d.State = *st
	d.Status = pl.status(*st)
	return d
}

func (pl *planner) status(st State) *apiv1.HandlerRolloutStatus {
	if st.Phase == "" {
		return nil
	}
	return &apiv1.HandlerRolloutStatus{
		Phase:          string(st.Phase),
		DesiredPods:    pl.v.desired,
		UpdatedPods:    pl.v.updated,
		ReadyPods:      pl.v.updatedReady,
		CanaryPod:      strings.Join(st.CanaryPods, ","),
		CanaryNode:     strings.Join(st.CanaryNodes, ","),
		StartedAt:      timePtr(st.StartedAt),
		PhaseChangeAt:  timePtr(st.PhaseChangeAt),
		LastProgressAt: timePtr(st.ProgressAt),
		Paused:         st.Paused,
		Message:        st.Message,

		MigrationWaits:            migrationWaitStatus(st.Waits),
		NodesWaitingForMigrations: int32(st.WaitingNodes),

		DataPlaneChecks: checkStatus(st.Checks.Results),
		CanaryVMIs:      watchedStatus(st.Checks.Watched),
		MigrationProbe:  probeStatus(st.Checks.Probe),
	}
}
