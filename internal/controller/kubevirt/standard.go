package kubevirt

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// StandardConditions adds Ready, Reconciling and Stalled, derived from
// upstream's conditions in conds, each with observedGeneration. Upstream's
// set cannot be read by generic tools: during an update Available, Progressing
// and Degraded are all True. The derivation:
//
//   - Progressing True, or a deletion under way: Reconciling;
//   - else Degraded True (a failure, a blocked uninstall) or Synchronized False
//     with nothing else (another CR is the active one): Stalled, with its reason;
//   - else Available True: Ready;
//   - else (nothing concluded yet): Reconciling.
func StandardConditions(conds []v1.KubeVirtCondition, generation int64, now metav1.Time) []v1.KubeVirtCondition {
	const t, f = corev1.ConditionTrue, corev1.ConditionFalse
	ready, reconciling, stalled := f, f, f
	reason, msg := ReasonDeploying, "Nothing was concluded yet."
	progressing := findCondition(conds, v1.KubeVirtConditionProgressing)
	degraded := findCondition(conds, v1.KubeVirtConditionDegraded)
	available := findCondition(conds, v1.KubeVirtConditionAvailable)
	synced := findCondition(conds, v1.KubeVirtConditionSynchronized)
	switch {
	case isStatus(progressing, t):
		reconciling, reason, msg = t, progressing.Reason, progressing.Message
	case isStatus(degraded, t) && degraded.Reason == ReasonDeleting:
		reconciling, reason, msg = t, degraded.Reason, degraded.Message
	case isStatus(degraded, t):
		stalled, reason, msg = t, degraded.Reason, degraded.Message
	case isStatus(available, t):
		ready, reason, msg = t, available.Reason, available.Message
	case available == nil && isStatus(synced, f):
		stalled, reason, msg = t, synced.Reason, synced.Message
	default:
		reconciling = t
	}
	for _, c := range []struct {
		typ    v1.KubeVirtConditionType
		status corev1.ConditionStatus
	}{{v1.KubeVirtConditionReady, ready}, {v1.KubeVirtConditionReconciling, reconciling}, {v1.KubeVirtConditionStalled, stalled}} {
		conds = setCondition(conds, v1.KubeVirtCondition{Type: c.typ, Status: c.status, Reason: reason, Message: msg}, now)
		findCondition(conds, c.typ).ObservedGeneration = generation
	}
	return conds
}

func isStatus(c *v1.KubeVirtCondition, s corev1.ConditionStatus) bool {
	return c != nil && c.Status == s
}
