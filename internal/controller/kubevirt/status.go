package kubevirt

import (
	"fmt"
	"runtime"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/uninstall"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/rollout"
)

// nextStatus is the CR's status after a pass: the one place every field the
// KubeVirt controller owns is decided, from the previous status and what the
// pass's scope recorded. It is pure. The fields it does not own
// (workloadUpdates, outdatedVirtualMachineInstanceWorkloads: the workload
// updater's and virt-controller's) are kept as they were.
func nextStatus(prev v1.KubeVirtStatus, s *scope, operatorVersion string) v1.KubeVirtStatus {
	next := *prev.DeepCopy()
	now := metav1.NewTime(s.now.Truncate(time.Second))
	switch {
	case s.ignored != "":
		next.Conditions = Conditions(next.Conditions, State{Kind: StateIgnored, Reason: ReasonExistingDeployment, Message: s.ignored}, now)
	case s.deletion != nil:
		setDeletion(&next, s.deletion, now)
	default:
		setNormal(&next, s, operatorVersion, now)
	}
	next.Conditions = StandardConditions(next.Conditions, s.kv.Generation, now)
	return next
}

// setNormal decides the status of an install, upgrade or a cluster at rest.
func setNormal(next *v1.KubeVirtStatus, s *scope, operatorVersion string, now metav1.Time) {
	next.OperatorVersion = operatorVersion
	next.DefaultArchitecture = defaultArchitecture(s.kv, next.DefaultArchitecture)
	next.Generations = s.generations()
	if s.cfg != nil {
		setTarget(next, s.cfg)
	}
	if next.Phase == v1.KubeVirtPhaseUnset {
		next.Phase = v1.KubeVirtPhaseDeploying
	}
	if s.handler != nil {
		next.HandlerRollout, _ = handlerRolloutStatus(prev(s).HandlerRollout, s.handler, now.Time)
	}
	if s.strategies != nil {
		next.InstallStrategies = s.strategies.Accepted
	}
	if pf := s.preflight; pf != nil {
		next.Preflight = &v1.PreflightStatus{TargetID: pf.targetID, Checks: slices.Clone(pf.checks)}
		next.Conditions = setCondition(next.Conditions, upgradeable(pf), now)
	}
	if s.hold != nil {
		next.RolloutHold = s.hold.status()
	}
	if s.rolledOver() {
		setObserved(next, s.cfg)
		next.Phase = v1.KubeVirtPhaseDeployed
		next.ObservedGeneration = &s.kv.Generation
		next.RolloutHold = nil // rolled over: nothing was held back
	}
	if state, concluded := outcome(next, s); concluded {
		next.Conditions = Conditions(next.Conditions, state, now)
	}
	if s.retained != nil {
		if c := retainedCondition(s.retained.crds); c != nil {
			next.Conditions = setCondition(next.Conditions, *c, now)
		} else {
			next.Conditions = removeConditions(next.Conditions, v1.KubeVirtConditionDataRetained)
		}
	}
	recordHistory(next, s, now.Time)
}

// prev is the status the pass started from.
func prev(s *scope) *v1.KubeVirtStatus { return &s.kv.Status }

// handlerRolloutStatus is status.handlerRollout after a pass whose canary
// decided st: st, unless it only progressed since the last write and is held
// back for up to rollout.ProgressInterval (counted from the last progress the
// previous status recorded): then the previous one, and when to look again to
// write it.
func handlerRolloutStatus(prev, st *v1.HandlerRolloutStatus, now time.Time) (*v1.HandlerRolloutStatus, time.Duration) {
	if hold, after := rollout.HoldProgress(prev, st, lastHandlerWrite(prev), now); hold {
		return prev, after
	}
	return st, 0
}

// timePtr is t as a status time.
func timePtr(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }

// outcome is the State upstream's conditions are derived from: the pass's
// problem first, then rolled over, else in progress (held or not). A pass
// whose object phase did not conclude, with no problem to report (a
// transient error within its grace), concludes nothing: the conditions stay
// as they were (concluded false).
func outcome(next *v1.KubeVirtStatus, s *scope) (state State, concluded bool) {
	created := s.objects != nil && s.objects.created
	switch c := next.Certificates; {
	case s.Problem != nil:
		return State{Kind: StateFailed, Reason: s.Problem.Reason, Message: s.Problem.Message, Created: created}, true
	case c != nil && c.Reason != "":
		// The certificate controller's problem (its own Warning told users).
		return State{Kind: StateFailed, Reason: c.Reason, Message: c.Message, Created: created}, true
	case s.objects == nil:
		return State{}, false
	case s.objects.rolledOver:
		return State{Kind: StateAvailable, Created: true}, true
	}
	state = State{Kind: StateDeploying, Created: created,
		TargetVersion: next.TargetKubeVirtVersion, TargetRegistry: next.TargetKubeVirtRegistry,
		ObservedVersion: next.ObservedKubeVirtVersion, ObservedRegistry: next.ObservedKubeVirtRegistry}
	if h := next.RolloutHold; h != nil && h.Step != "" {
		state.Reason, state.Message = h.Reason, "held before "+h.Step+": "+h.Message
	}
	switch {
	case s.takeover.sameRelease(s.cfg):
		state.Kind, state.Reason = StateTakingOver, ReasonTakingOver
		state.Message = fmt.Sprintf("Taking over KubeVirt %s from %s (deployment %s of another operator): only this operator's stamps change, no component restarts",
			s.cfg.KubeVirtVersion, s.cfg.Registry, s.takeover.ID)
	case next.ObservedDeploymentID != "" && next.ObservedDeploymentID != next.TargetDeploymentID:
		state.Kind = StateUpdating
	}
	return state, true
}

// setDeletion decides the status of an uninstall.
func setDeletion(next *v1.KubeVirtStatus, d *uninstall.Result, now metav1.Time) {
	switch {
	case d.Blocked != "":
		next.Conditions = Conditions(next.Conditions, State{Kind: StateBlocked, Reason: ReasonDeletionBlocked, Message: d.Blocked}, now)
		return
	case d.Done:
		next.Phase = v1.KubeVirtPhaseDeleted
		return
	}
	next.Phase = v1.KubeVirtPhaseDeleting
	state := State{Kind: StateDeleting, Message: d.Remaining}
	if d.Failed != "" {
		state.Reason, state.Message = ReasonDeletionFailed, "Deletion failed and is retried: "+d.Failed
	}
	next.Conditions = Conditions(next.Conditions, state, now)
}

// setTarget records cfg as the configuration the operator rolls out.
func setTarget(st *v1.KubeVirtStatus, cfg *deployid.Config) {
	st.TargetKubeVirtVersion = cfg.KubeVirtVersion
	st.TargetKubeVirtRegistry = cfg.Registry
	st.TargetDeploymentConfig = cfg.JSON()
	st.TargetDeploymentID = cfg.ID
}

// setObserved records cfg as the configuration that is rolled out and ready.
func setObserved(st *v1.KubeVirtStatus, cfg *deployid.Config) {
	st.ObservedKubeVirtVersion = cfg.KubeVirtVersion
	st.ObservedKubeVirtRegistry = cfg.Registry
	st.ObservedDeploymentConfig = cfg.JSON()
	st.ObservedDeploymentID = cfg.ID
}

// defaultArchitecture is status.defaultArchitecture, which virt-api's mutating
// webhook puts on every VMI that names no architecture (without it virt-api
// refuses VMIs as of an "unsupported architecture"): the CR's
// configuration.architectureConfiguration.defaultArchitecture when set, else the
// operator's own architecture if the field is still empty, as upstream.
func defaultArchitecture(kv *v1.KubeVirt, current string) string {
	if ac := kv.Spec.Configuration.ArchitectureConfiguration; ac != nil && ac.DefaultArchitecture != "" {
		return ac.DefaultArchitecture
	}
	if current == "" {
		return runtime.GOARCH
	}
	return current
}

// upgradeable is the Upgradeable condition of a preflight verdict.
func upgradeable(pf *preflightResult) v1.KubeVirtCondition {
	if pf.passed {
		return v1.KubeVirtCondition{Type: v1.KubeVirtConditionUpgradeable, Status: corev1.ConditionTrue, Reason: "PreflightPassed", Message: pf.summary}
	}
	return v1.KubeVirtCondition{Type: v1.KubeVirtConditionUpgradeable, Status: corev1.ConditionFalse, Reason: pf.reason, Message: pf.message}
}
