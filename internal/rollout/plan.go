package rollout

import (
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// Plan decides the next step of the virt-handler rollout.
//
// Assumptions: obs.Pods are the DaemonSet's pods; obs.Previous is what the last
// Decision.State said (or StateFromStatus); the controller applies UpdateStrategy
// in the same write as the desired template, so a template change never lands
// under RollingUpdate.
//
// Invariants: at most CanarySize pods run the target while the phase is Started or
// Canary (the DaemonSet is OnDelete and only pods on State.CanaryNodes are
// deleted, and only once the DaemonSet controller has observed the new template);
// the rollout widens only after every canary pod has been Ready for BakeTime with
// no restart; an updated pod with any restart ends the rollout in Failed with a
// rollback, and Failed holds for that target; only SpecChanged restarts the
// canary, so an unknown generation alone resumes where the state says; more
// updated pods than desired is an error and changes nothing; the pod of a node
// an unfinished migration holds (Observation.Migrations, within
// MaxMigrationWait of its start) is never deleted, and while such a node's
// pod is still old the widened rollout is OnDelete (the DaemonSet controller
// replaces nothing by itself) and the Decision deletes the pods of a fast
// step's batch elsewhere. With Policy.Checks, the baked canary goes to
// Verifying (still OnDelete) and widens only once every check has passed; a
// failed check fails the rollout with a rollback, as a crash does; the probe
// has at most one unfinished migration, named from the rollout and the move,
// and a failed rollout aborts it.
func Plan(obs Observation, p Policy) (Decision, error) {
	if err := p.Validate(); err != nil {
		return Decision{}, err
	}
	if obs.DaemonSet == nil {
		return Decision{}, errors.New("rollout: no DaemonSet observed")
	}
	var prev State
	if obs.Previous != nil {
		prev = *obs.Previous
	}
	pl := &planner{obs: obs, p: p, v: newView(obs), prev: prev, st: prev,
		h: holdsOf(obs.Migrations, p.MaxMigrationWait, obs.Now)}
	pl.v.held, pl.v.expired = pl.h.held, pl.h.expired
	pl.st.CanaryNodes, pl.st.CanaryPods = slices.Clone(prev.CanaryNodes), slices.Clone(prev.CanaryPods)
	pl.st.Checks = prev.Checks.clone()
	failedHere := prev.Phase == PhaseFailed && prev.TargetID != "" && prev.TargetID == obs.Target.ID

	switch {
	case failedHere:
		pl.st.Phase = PhaseFailed
		pl.abortProbe() // a probe migration left unfinished (a failed delete) goes now
		return pl.finish(), nil
	case obs.SpecChanged:
		same := prev.TargetID == obs.Target.ID && prev.Phase.Active()
		if prev.Phase != PhaseStarted || !same {
			pl.st = State{Phase: PhaseStarted, TargetID: obs.Target.ID, StartedAt: obs.Now}
			pl.restarted = true
		}
		if same { // a metadata-only change: same canary, and its crashes still count
			pl.st.StartedAt, pl.st.CanaryNodes = prev.StartedAt, slices.Clone(prev.CanaryNodes)
			pl.st.Checks = prev.Checks.clone()
		}
	case atRest(obs, prev) && (len(pl.h.held) == 0 || !cleanupPending(obs.DaemonSet, p)):
		// At rest. A clean-up that migrations hold, or waits to clear from
		// status, take the re-check below.
		return pl.idle(), nil
	case !prev.Phase.Active():
		// No active state: resume from what the cluster shows. With old pods left the
		// rollout began when its first updated pod was created (so a crash of it is
		// judged); with none left it is a re-check starting now.
		pl.st = State{Phase: pl.infer(), TargetID: obs.Target.ID, StartedAt: obs.Now}
		if pl.v.old > 0 && !pl.v.firstUpdated.IsZero() {
			pl.st.StartedAt = pl.v.firstUpdated
		}
		pl.recheck = prev.Phase == PhaseSuccessful
	}
	if pl.st.TargetID == "" {
		pl.st.TargetID = obs.Target.ID
	}
	if crashed := pl.v.crashesSince(pl.st.StartedAt); len(crashed) > 0 {
		if !pl.st.Phase.widened() || len(crashed) > pl.p.AllowedCrashes(pl.v.desired) {
			pl.fail(crashed[0], len(crashed))
			return pl.finish(), nil
		}
		pl.tolerated = crashed
	}
	if pl.v.updated > pl.v.desired {
		d := pl.hold()
		return d, fmt.Errorf("unexpected virt-handler rollout state: %d updated pods, %d desired",
			pl.v.updated, pl.v.desired)
	}
	for range maxTransitionsInOne {
		next := pl.step()
		if next == pl.st.Phase {
			break
		}
		pl.st.Phase = next
	}
	if pl.recheck && pl.st.Phase == PhaseSuccessful {
		// Still the rollout that completed: its start and its canary.
		pl.st.StartedAt = pl.prev.StartedAt
		pl.st.CanaryNodes, pl.st.CanaryPods = slices.Clone(pl.prev.CanaryNodes), slices.Clone(pl.prev.CanaryPods)
		pl.st.Checks = pl.prev.Checks.clone()
	}
	return pl.finish(), nil
}

// atRest: a finished rollout with nothing to re-check (its DaemonSet at the
// resting strategy, its generation recorded, no wait for a migration in
// status): Plan changes nothing, unless migrations hold a clean-up.
func atRest(obs Observation, prev State) bool {
	return !obs.SpecChanged && !prev.Phase.Active() && prev.Phase != PhaseFailed &&
		IsDefault(obs.DaemonSet.Spec.UpdateStrategy) && !obs.GenerationUnknown && prev.WaitingNodes == 0
}

// NeedsMigrations reports whether Plan would read obs.Migrations: the
// controller lists them (from its cache) only then, so a rollout at rest
// costs no list of every migration in the cluster.
func NeedsMigrations(obs Observation, p Policy) bool {
	if obs.DaemonSet == nil {
		return false
	}
	var prev State
	if obs.Previous != nil {
		prev = *obs.Previous
	}
	return !atRest(obs, prev) || cleanupPending(obs.DaemonSet, p)
}

type planner struct {
	obs       Observation
	p         Policy
	v         view
	prev, st  State
	d         Decision
	restarted bool // SpecChanged began a new rollout
	recheck   bool // re-checking a Successful rollout (unknown generation)
	// h are the nodes unfinished migrations touch; waits those whose pod this
	// step leaves in place for one. onlyMigrations: nothing but such waits
	// keeps the phase from moving on (the deadline does not run, as while paused).
	h              holds
	waits          []NodeWait
	onlyMigrations bool
	// tolerated are crashed updated pods within Policy.AllowedCrashes (after the widening).
	tolerated []*corev1.Pod
}

// maxTransitionsInOne bounds the phases one Plan may pass through.
const maxTransitionsInOne = 6

// infer picks the phase to resume in when no active phase is stored.
func (pl *planner) infer() Phase {
	live := pl.obs.DaemonSet.Spec.UpdateStrategy
	switch {
	case pl.v.old == 0:
		return PhaseWaiting
	case live.Type == appsv1.RollingUpdateDaemonSetStrategyType && !IsDefault(live):
		return PhaseWaiting // already widened by someone; the canary is moot
	case int(pl.v.updated) > pl.p.CanarySize:
		return PhaseIncreasing
	}
	return PhaseCanary
}

// step runs the current phase once and returns the phase it leads to. What a
// phase deletes and waits for is the last step's alone.
func (pl *planner) step() Phase {
	pl.waits, pl.onlyMigrations = nil, false
	pl.d.DeletePods, pl.d.Expired, pl.d.CleanupHeld = nil, nil, false
	switch pl.st.Phase {
	case PhaseStarted:
		return pl.started()
	case PhaseCanary:
		return pl.canary()
	case PhaseVerifying:
		return pl.verifying()
	case PhaseIncreasing:
		pl.d.UpdateStrategy = pl.fastStrategy()
		pl.st.Message = "widening to " + StrategyString(*RollingUpdate(pl.p.FastStep)) + pl.batchSummary()
		if pl.v.allDone() {
			return PhaseSuccessful
		}
		if pl.obs.Paused {
			return pl.holdWidened()
		}
		if SameStrategy(pl.obs.DaemonSet.Spec.UpdateStrategy, *pl.d.UpdateStrategy) {
			return PhaseWaiting
		}
		return PhaseIncreasing
	case PhaseWaiting:
		pl.d.UpdateStrategy = pl.fastStrategy()
		pl.st.Message = fmt.Sprintf("%d of %d pods updated and ready", pl.v.updatedReady, pl.v.desired)
		if len(pl.v.leftOut) > 0 {
			pl.st.Message += "; " + pl.v.leftOutSummary()
		}
		pl.st.Message += pl.batchSummary() + pl.toleratedSummary()
		if pl.v.allDone() {
			return PhaseSuccessful
		}
		if pl.obs.Paused {
			return pl.holdWidened()
		}
		return PhaseWaiting
	case PhaseSuccessful:
		pl.d.UpdateStrategy = Default()
		pl.d.RecordGeneration = true
		pl.d.Done = true
		pl.st.Message = fmt.Sprintf("all %d pods updated and ready", pl.v.desired)
		if len(pl.v.leftOut) > 0 {
			pl.d.LeftOut = pl.v.leftOut
			pl.st.Message = fmt.Sprintf("%d of %d pods updated and ready; %s: their pods follow when the nodes are back",
				pl.v.updatedReadyElsewhere, pl.v.desired, pl.v.leftOutSummary())
		}
		pl.st.Message += pl.toleratedSummary()
		pl.st.BakedSince = time.Time{}
		if pl.holdCleanup(); pl.d.CleanupHeld {
			pl.st.Message += "; dropping the settings carried over from the previous template (every pod replaced once more) waits: " +
				waitSummary(sortedWaits(pl.waits), len(pl.waits))
		}
	}
	return pl.st.Phase
}

// batchSummary says how the widened rollout replaces pods while migrations
// run, and which nodes wait ("" when the DaemonSet controller does it all).
func (pl *planner) batchSummary() string {
	if pl.d.UpdateStrategy == nil || pl.d.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType {
		return ""
	}
	out := "; migrations are running: the operator replaces the pods (OnDelete), " +
		StrategyString(*RollingUpdate(pl.p.FastStep)) + ", skipping their nodes"
	if pl.v.old == 0 {
		out = "; migrations are running: the DaemonSet's template waits (OnDelete)"
	}
	if len(pl.waits) > 0 {
		out += "; " + waitSummary(sortedWaits(pl.waits), len(pl.waits))
	}
	return out
}

// holdWidened pauses a widened rollout: OnDelete lets the pods being replaced
// finish and updates no others.
func (pl *planner) holdWidened() Phase {
	pl.d.UpdateStrategy = OnDelete()
	pl.d.DeletePods, pl.d.Expired = nil, nil
	pl.st.Message = fmt.Sprintf("paused at %d of %d pods updated and ready", pl.v.updatedReady, pl.v.desired) + pl.toleratedSummary()
	if len(pl.waits) > 0 {
		pl.st.Message += "; " + waitSummary(sortedWaits(pl.waits), len(pl.waits))
	}
	return pl.st.Phase
}

// toleratedSummary names the crashed updated pods tolerated after the canary
// ("" when none), so neither a Waiting nor the Successful status hides them.
func (pl *planner) toleratedSummary() string {
	if len(pl.tolerated) == 0 {
		return ""
	}
	pod := pl.tolerated[0]
	return fmt.Sprintf("; %d updated pods crashed, %d tolerated after the canary (first: %s on node %s)",
		len(pl.tolerated), pl.p.AllowedCrashes(pl.v.desired), pod.Name, pod.Spec.NodeName)
}

// started waits until the DaemonSet carries the target template under OnDelete
// and its controller has observed it; deleting a pod earlier could recreate it
// from the old template or let RollingUpdate widen.
func (pl *planner) started() Phase {
	pl.d.UpdateStrategy = OnDelete()
	ds := pl.obs.DaemonSet
	pl.st.Message = "rolling out " + pl.obs.Target.Version + ": waiting for the DaemonSet to take the new template"
	if metadata.IsUpToDate(&ds.Spec.Template, pl.obs.Target) && pl.v.observed &&
		ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
		return PhaseCanary
	}
	return PhaseStarted
}

// fail ends the rollout, naming the first of the crashed updated pods; a
// canary that crashed while its data-plane checks ran fails CanaryPod, and
// stops the others.
func (pl *planner) fail(pod *corev1.Pod, crashed int) {
	widened := pl.st.Phase.widened()
	defer func() {
		if r := pl.st.Checks.result(CheckCanaryPod); r != nil && !r.State.Finished() && !widened {
			r.State, r.Message, r.FinishedAt = CheckFailed, "pod "+pod.Name+" on node "+pod.Spec.NodeName+" crashed ("+restartSummary(pod)+")", pl.obs.Now
		}
		pl.stopChecks()
	}()
	pl.st.Phase = PhaseFailed
	pl.st.BakedSince = time.Time{}
	pl.st.Message = fmt.Sprintf("daemonSet %s rollout failed: pod %s on node %s crashed (%s); rolling back",
		pl.obs.DaemonSet.Name, pod.Name, pod.Spec.NodeName, restartSummary(pod))
	if widened {
		pl.st.Message = fmt.Sprintf("daemonSet %s rollout failed: %d updated pods crashed, more than the %d tolerated after the canary; the first, pod %s on node %s (%s); rolling back",
			pl.obs.DaemonSet.Name, crashed, pl.p.AllowedCrashes(pl.v.desired), pod.Name, pod.Spec.NodeName, restartSummary(pod))
	}
	pl.d.Event = &Event{Type: EventTypeWarning, Reason: ReasonFailedUpdate, Message: pl.st.Message}
}
