package kubevirt

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

const (
	eventNormal  = corev1.EventTypeNormal
	eventWarning = corev1.EventTypeWarning
)

// eventsFor are a pass's Events, in order: a new target; what the phases did
// (a Job created, certificates issued, objects deleted, a rollout phase
// entered); a problem that appeared or changed; a deployment done. The
// transitions (and the rollout's phase Events, which record one) are derived
// from the previous and the next status and sent only when the status that
// records them was written, so each fires once, however many passes see the
// same state; what the phases did is sent either way, as it happened.
func eventsFor(prev, next v1.KubeVirtStatus, s *scope, patched bool) []kvEvent {
	var out []kvEvent
	keep := func(e kvEvent) {
		if patched || !e.Transition {
			out = append(out, e)
		}
	}
	if next.TargetDeploymentID != prev.TargetDeploymentID && s.cfg != nil {
		keep(kvEvent{Type: eventNormal, Reason: "TargetChanged", Action: "Rollout", Transition: true, Message: fmt.Sprintf(
			"Rolling out KubeVirt %s (deployment ID %s); %s", s.cfg.KubeVirtVersion, s.cfg.ID, targetChangeReason(s))})
	}
	for _, e := range s.Events {
		keep(e)
	}
	if p := s.Problem; p != nil && p.Warning != "" && conditionChanged(prev, next, v1.KubeVirtConditionDegraded) {
		msg := p.Message
		if p.Detail != "" {
			msg += " (" + p.Detail + ")"
		}
		keep(kvEvent{Type: eventWarning, Reason: p.Warning, Action: "Reconcile", Message: msg, Transition: true})
	}
	if d := s.deletion; d != nil {
		if d.Blocked != "" && conditionChanged(prev, next, v1.KubeVirtConditionSynchronized) {
			keep(kvEvent{Type: eventWarning, Reason: ReasonDeletionBlocked, Action: "Uninstall", Message: d.Blocked, Transition: true})
		}
		if d.Failed != "" && conditionChanged(prev, next, v1.KubeVirtConditionDegraded) {
			keep(kvEvent{Type: eventWarning, Reason: ReasonDeletionFailed, Action: "Uninstall", Message: d.Failed, Transition: true})
		}
	}
	if next.ObservedDeploymentID != prev.ObservedDeploymentID && next.ObservedDeploymentID != "" {
		keep(kvEvent{Type: eventNormal, Reason: "Deployed", Action: "Rollout", Transition: true, Message: fmt.Sprintf(
			"KubeVirt %s from %s is deployed (deployment ID %s)", next.ObservedKubeVirtVersion, next.ObservedKubeVirtRegistry, next.ObservedDeploymentID)})
	}
	return out
}

// conditionChanged: the condition of type t differs between prev and next in
// status, reason or message (or appeared).
func conditionChanged(prev, next v1.KubeVirtStatus, t v1.KubeVirtConditionType) bool {
	a, b := findCondition(prev.Conditions, t), findCondition(next.Conditions, t)
	switch {
	case b == nil:
		return false
	case a == nil:
		return true
	}
	return a.Status != b.Status || a.Reason != b.Reason || a.Message != b.Message
}
