package rollout

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	apiv1 "github.com/virt-operator/virt-operator/api/v1"
)

// Phase of the virt-handler rollout, as written to status.handlerRollout.phase.
type Phase string

const (
	PhaseStarted Phase = "Started"
	PhaseCanary  Phase = "Canary"
	// PhaseVerifying runs the data-plane checks between the bake and the
	// fast step (only when spec.handlerRollout.dataPlaneChecks asks for any).
	PhaseVerifying  Phase = "Verifying"
	PhaseIncreasing Phase = "Increasing"
	PhaseWaiting    Phase = "Waiting"
	PhaseSuccessful Phase = "Successful"
	PhaseFailed     Phase = "Failed"
)

// Active reports whether a rollout in this phase still has work to do.
func (p Phase) Active() bool {
	switch p {
	case PhaseStarted, PhaseCanary, PhaseVerifying, PhaseIncreasing, PhaseWaiting:
		return true
	}
	return false
}

// widened reports whether the canary has baked and the rollout has gone past
// it: from here on a crash is judged against Policy.AllowedCrashes.
func (p Phase) widened() bool {
	switch p {
	case PhaseIncreasing, PhaseWaiting, PhaseSuccessful:
		return true
	}
	return false
}

// Policy tunes the rollout. The zero value is invalid; start from DefaultPolicy.
type Policy struct {
	// CanarySize is how many pods are updated, and must bake, before the rollout widens.
	CanarySize int
	// FastStep is the DaemonSet's maxUnavailable once the canary has baked.
	FastStep intstr.IntOrString
	// BakeTime is how long every canary pod must stay Ready with no restart.
	BakeTime time.Duration
	// PhaseDeadline is how long the rollout may go without progress before the Decision reports Degraded.
	PhaseDeadline time.Duration
	// MaxCrashing is how many updated pods may crash after the canary has baked
	// (a count, or a percentage of the desired pods that is at least one pod).
	MaxCrashing intstr.IntOrString
	// MaxMigrationWait is how long a node's pod is left in place for an
	// unfinished migration from or to the node, from the migration's start; 0
	// waits for none.
	MaxMigrationWait time.Duration
	// Checks are the data-plane checks between the bake and the fast step
	// (none: the canary widens once baked).
	Checks DataPlaneChecks
}

// AllowedCrashes is how many crashed updated pods the rollout tolerates once
// the canary has baked, for desired pods: a node reboot must not roll the fleet back.
func (p Policy) AllowedCrashes(desired int32) int {
	if p.MaxCrashing.Type == intstr.Int {
		return int(p.MaxCrashing.IntVal)
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&p.MaxCrashing, int(desired), false)
	if err != nil {
		return 0
	}
	return max(n, 1)
}

// DefaultBakeTime is 10 s. A bad virt-handler typically passes its readiness
// probe and then dies within seconds (the sandbox's crash-loop image crashes about
// 2 s after Ready). 10 s is five times that, leaving room for the kubelet to report
// the restart and for the informer to deliver it, and it is paid once per upgrade,
// not once per node. Upstream has no bake at all, which is how a crash 2 s after
// Ready reached 40 of 200 nodes there.
const DefaultBakeTime = 10 * time.Second

// DefaultMaxMigrationWait is 10 minutes: a live migration of a busy guest
// takes seconds to a few minutes; one that has run for 10 is more likely stuck
// than about to finish, and holding a node's upgrade for it longer would let
// one stuck migration hold the rollout indefinitely.
const DefaultMaxMigrationWait = 10 * time.Minute

// DefaultPolicy is upstream's 1 pod → 10% → 1 with a DefaultBakeTime bake, a
// 10 minute per-phase deadline, and DefaultMaxMigrationWait.
func DefaultPolicy() Policy {
	return Policy{
		CanarySize:       1,
		FastStep:         intstr.FromString("10%"),
		BakeTime:         DefaultBakeTime,
		PhaseDeadline:    10 * time.Minute,
		MaxCrashing:      intstr.FromString("10%"),
		MaxMigrationWait: DefaultMaxMigrationWait,
	}
}

// Validate names the first field that is out of range.
func (p Policy) Validate() error {
	if p.CanarySize < 1 {
		return fmt.Errorf("canarySize: must be at least 1, got %d", p.CanarySize)
	}
	switch p.FastStep.Type {
	case intstr.Int:
		if p.FastStep.IntVal < 1 {
			return fmt.Errorf("fastStep: must be at least 1 pod, got %d", p.FastStep.IntVal)
		}
	case intstr.String:
		var pct int
		var rest string
		if n, _ := fmt.Sscanf(p.FastStep.StrVal, "%d%%%s", &pct, &rest); n < 1 ||
			p.FastStep.StrVal != fmt.Sprintf("%d%%", pct) || pct < 1 || pct > 100 {
			return fmt.Errorf("fastStep: must be a pod count or a percentage from 1%% to 100%%, got %q", p.FastStep.StrVal)
		}
	default:
		return fmt.Errorf("fastStep: unknown type %d", p.FastStep.Type)
	}
	if err := validateMaxCrashing(p.MaxCrashing); err != nil {
		return err
	}
	if p.BakeTime < 0 {
		return fmt.Errorf("bakeTime: must not be negative, got %s", p.BakeTime)
	}
	if p.MaxMigrationWait < 0 {
		return fmt.Errorf("maxMigrationWait: must not be negative, got %s", p.MaxMigrationWait)
	}
	if p.PhaseDeadline <= 0 {
		return fmt.Errorf("progressDeadline: must be positive, got %s", p.PhaseDeadline)
	}
	if p.PhaseDeadline <= p.BakeTime {
		return fmt.Errorf("progressDeadline: must exceed bakeTime (%s), got %s", p.BakeTime, p.PhaseDeadline)
	}
	return nil
}

func validateMaxCrashing(v intstr.IntOrString) error {
	switch v.Type {
	case intstr.Int:
		if v.IntVal < 0 {
			return fmt.Errorf("maxCrashing: must not be negative, got %d", v.IntVal)
		}
	case intstr.String:
		var pct int
		if n, _ := fmt.Sscanf(v.StrVal, "%d%%", &pct); n < 1 || v.StrVal != fmt.Sprintf("%d%%", pct) || pct < 0 || pct > 100 {
			return fmt.Errorf("maxCrashing: must be a pod count or a percentage from 0%% to 100%%, got %q", v.StrVal)
		}
	}
	return nil
}

// OnDelete is the strategy while the canary bakes: the DaemonSet controller
// replaces no pod by itself, so the rollout cannot widen behind our back.
func OnDelete() *appsv1.DaemonSetUpdateStrategy {
	return &appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
}

// RollingUpdate is a RollingUpdate strategy with the given maxUnavailable.
func RollingUpdate(maxUnavailable intstr.IntOrString) *appsv1.DaemonSetUpdateStrategy {
	mu := maxUnavailable
	return &appsv1.DaemonSetUpdateStrategy{
		Type:          appsv1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &mu},
	}
}

// Default is the resting strategy: RollingUpdate with maxUnavailable 1.
func Default() *appsv1.DaemonSetUpdateStrategy { return RollingUpdate(intstr.FromInt32(1)) }

// SameStrategy compares type and maxUnavailable (maxSurge is not ours).
func SameStrategy(a, b appsv1.DaemonSetUpdateStrategy) bool {
	if a.Type != b.Type {
		return false
	}
	if a.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		return true
	}
	return maxUnavailable(a) == maxUnavailable(b)
}

// IsDefault: RollingUpdate with an integer maxUnavailable of 1. An unset
// rollingUpdate is not default (as upstream reads it), so it counts as ongoing.
func IsDefault(s appsv1.DaemonSetUpdateStrategy) bool {
	return s.Type == appsv1.RollingUpdateDaemonSetStrategyType &&
		maxUnavailable(s) == intstr.FromInt32(1)
}

func maxUnavailable(s appsv1.DaemonSetUpdateStrategy) intstr.IntOrString {
	if s.RollingUpdate == nil || s.RollingUpdate.MaxUnavailable == nil {
		return intstr.IntOrString{}
	}
	return *s.RollingUpdate.MaxUnavailable
}

// StrategyString renders a strategy for messages: "OnDelete", "maxUnavailable 10%".
func StrategyString(s appsv1.DaemonSetUpdateStrategy) string {
	if s.Type == appsv1.OnDeleteDaemonSetStrategyType {
		return "OnDelete"
	}
	mu := maxUnavailable(s)
	return "maxUnavailable " + mu.String()
}

// PolicyFrom is the policy spec.handlerRollout asks for: DefaultPolicy with
// the fields it sets, validated, so an error names the field.
func PolicyFrom(spec *apiv1.HandlerRolloutPolicy) (Policy, error) {
	p := DefaultPolicy()
	if spec != nil {
		if spec.CanarySize != nil {
			p.CanarySize = int(*spec.CanarySize)
		}
		if spec.FastStep != nil {
			p.FastStep = *spec.FastStep
		}
		// A value that is not a Go duration (stored under an older CRD) is
		// named, never read as 0.
		if err := spec.BakeTime.Check("bakeTime"); err != nil {
			return p, fmt.Errorf("spec.handlerRollout: %w", err)
		}
		if err := spec.ProgressDeadline.Check("progressDeadline"); err != nil {
			return p, fmt.Errorf("spec.handlerRollout: %w", err)
		}
		if err := spec.MaxMigrationWait.Check("maxMigrationWait"); err != nil {
			return p, fmt.Errorf("spec.handlerRollout: %w", err)
		}
		if spec.MaxMigrationWait != nil {
			p.MaxMigrationWait = spec.MaxMigrationWait.Duration
		}
		if spec.BakeTime != nil {
			p.BakeTime = spec.BakeTime.Duration
		}
		if spec.ProgressDeadline != nil {
			p.PhaseDeadline = spec.ProgressDeadline.Duration
		}
		if spec.MaxCrashing != nil {
			p.MaxCrashing = *spec.MaxCrashing
		}
		checks, err := checksFrom(spec.DataPlaneChecks)
		if err != nil {
			return p, fmt.Errorf("spec.handlerRollout.%w", err)
		}
		p.Checks = checks
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("spec.handlerRollout: %w", err)
	}
	return p, nil
}
