package kubevirt

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Condition reasons, as upstream writes them, plus ours for states upstream
// leaves unexplained.
const (
	ReasonDeploying           = "DeploymentInProgress"
	ReasonUpdating            = "UpdateInProgress"
	ReasonAllResourcesCreated = "AllResourcesCreated"
	ReasonAllComponentsReady  = "AllComponentsReady"
	ReasonExistingDeployment  = "ExistingDeployment"
	ReasonDeploymentFailed    = "DeploymentFailed"
	ReasonDeleting            = "DeletionInProgress"
	ReasonDeletionFailed      = "DeletionFailed"
	// ReasonDeletionBlocked: uninstallStrategy BlockUninstallIfWorkloadsExist holds the uninstall.
	ReasonDeletionBlocked = "DeletionBlockedByWorkloads"
	// ReasonStrategyJobFailed: the install-strategy Job failed; it is retried with backoff.
	ReasonStrategyJobFailed = "InstallStrategyJobFailed"
	// ReasonInvalidCustomization: a customizeComponents patch does not apply; nothing was written.
	ReasonInvalidCustomization = "InvalidCustomization"
	// ReasonInvalidConfig: the CR or the operator's environment gives no valid deployment config.
	ReasonInvalidConfig = "InvalidConfiguration"
)

// State is what the reconcile concluded, as one value the conditions derive from.
type State struct {
	// Kind of situation; see the State* constants.
	Kind StateKind
	// Reason and Message explain a failure or a block (StateFailed, StateBlocked),
	// or a held rollout (StateDeploying, StateUpdating: replacing upstream's text).
	Reason, Message string
	// Created is true once every strategy object exists.
	Created bool
	// Target and observed version/registry, for the messages.
	TargetVersion, TargetRegistry, ObservedVersion, ObservedRegistry string
}

// StateKind is one of the situations upstream's conditions distinguish.
type StateKind string

const (
	StateDeploying StateKind = "Deploying" // first install, not ready yet
	StateUpdating  StateKind = "Updating"  // observed != target, rolling over
	// StateTakingOver: another operator's deployment of the target's release
	// is being taken over; it stays available and is not degraded.
	StateTakingOver StateKind = "TakingOver"
	StateAvailable  StateKind = "Available" // everything ready on the target
	StateFailed     StateKind = "Failed"    // cannot progress; Reason/Message say why
	StateDeleting   StateKind = "Deleting"
	StateBlocked    StateKind = "Blocked" // deletion held by workloads
	StateIgnored    StateKind = "Ignored" // another KubeVirt CR is the active one
)

// Conditions returns the CR's conditions for state, starting from current so
// that unchanged conditions keep their timestamps (no writes at rest).
func Conditions(current []v1.KubeVirtCondition, s State, now metav1.Time) []v1.KubeVirtCondition {
	set := func(t v1.KubeVirtConditionType, status corev1.ConditionStatus, reason, msg string) {
		current = setCondition(current, v1.KubeVirtCondition{Type: t, Status: status, Reason: reason, Message: msg}, now)
	}
	tfs := func(available, progressing, degraded corev1.ConditionStatus, reason, msg string) {
		set(v1.KubeVirtConditionAvailable, available, reason, msg)
		set(v1.KubeVirtConditionProgressing, progressing, reason, msg)
		set(v1.KubeVirtConditionDegraded, degraded, reason, msg)
	}
	const t, f = corev1.ConditionTrue, corev1.ConditionFalse
	switch s.Kind {
	case StateDeploying:
		current = removeConditions(current, v1.KubeVirtConditionSynchronized)
		tfs(f, t, f, orDefault(s.Reason, ReasonDeploying), orDefault(s.Message, fmt.Sprintf("Deploying version %s with registry %s", s.TargetVersion, s.TargetRegistry)))
	case StateUpdating:
		current = removeConditions(current, v1.KubeVirtConditionSynchronized, v1.KubeVirtConditionCreated)
		tfs(t, t, t, orDefault(s.Reason, ReasonUpdating), orDefault(s.Message, fmt.Sprintf("Transitioning from previous version %s with registry %s to target version %s using registry %s",
			s.ObservedVersion, s.ObservedRegistry, s.TargetVersion, s.TargetRegistry)))
	case StateTakingOver:
		current = removeConditions(current, v1.KubeVirtConditionSynchronized)
		tfs(t, t, f, s.Reason, s.Message)
	case StateAvailable:
		current = removeConditions(current, v1.KubeVirtConditionSynchronized)
		tfs(t, f, f, ReasonAllComponentsReady, "All components are ready.")
	case StateFailed:
		set(v1.KubeVirtConditionSynchronized, f, s.Reason, s.Message)
		set(v1.KubeVirtConditionProgressing, f, s.Reason, s.Message)
		set(v1.KubeVirtConditionDegraded, t, s.Reason, s.Message)
		// A failed upgrade keeps the previous version running: Available is left as it was.
		if findCondition(current, v1.KubeVirtConditionAvailable) == nil {
			set(v1.KubeVirtConditionAvailable, f, s.Reason, s.Message)
		}
	case StateDeleting:
		current = removeConditions(current, v1.KubeVirtConditionSynchronized, v1.KubeVirtConditionCreated)
		msg := s.Message
		if msg == "" {
			msg = "Deletion was triggered"
		}
		tfs(f, f, t, ReasonDeleting, msg)
	case StateBlocked:
		current = removeConditions(current, v1.KubeVirtConditionCreated)
		set(v1.KubeVirtConditionSynchronized, f, s.Reason, s.Message)
		set(v1.KubeVirtConditionDegraded, t, s.Reason, s.Message)
	case StateIgnored:
		set(v1.KubeVirtConditionSynchronized, f, s.Reason, s.Message)
	}
	if s.Created && s.Kind != StateDeleting {
		set(v1.KubeVirtConditionCreated, t, ReasonAllResourcesCreated, "All resources were created.")
	}
	return current
}

// orDefault is s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// setCondition replaces or appends c. Timestamps move only when the status
// changes, so a reconcile that concludes the same thing writes nothing.
func setCondition(conds []v1.KubeVirtCondition, c v1.KubeVirtCondition, now metav1.Time) []v1.KubeVirtCondition {
	if old := findCondition(conds, c.Type); old != nil {
		if old.Status == c.Status {
			old.Reason, old.Message = c.Reason, c.Message
			return conds
		}
		*old = c
		old.LastProbeTime, old.LastTransitionTime = now, now
		return conds
	}
	c.LastProbeTime, c.LastTransitionTime = now, now
	return append(conds, c)
}

func findCondition(conds []v1.KubeVirtCondition, t v1.KubeVirtConditionType) *v1.KubeVirtCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func removeConditions(conds []v1.KubeVirtCondition, types ...v1.KubeVirtConditionType) []v1.KubeVirtCondition {
	out := make([]v1.KubeVirtCondition, 0, len(conds))
	for _, c := range conds {
		keep := true
		for _, t := range types {
			keep = keep && c.Type != t
		}
		if keep {
			out = append(out, c)
		}
	}
	return out
}
