package vmsim

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// vmiInput is what the VMI controller sees of one VMI.
type vmiInput struct {
	VMI   *v1.VirtualMachineInstance
	Pods  []corev1.Pod // launcher pods created by the VMI (label CreatedByLabel = its UID)
	Image string       // the current launcher image
	Now   metav1.Time
}

// vmiPlan is what the VMI controller does, in this order.
type vmiPlan struct {
	CreatePod *corev1.Pod                      // the VMI's first launcher pod
	Status    *v1.VirtualMachineInstanceStatus // nil: unchanged
}

// planVMI plays virt-controller and virt-handler for a VMI that is not migrating:
// it gets a launcher pod, follows it to Running, and goes Succeeded when the pod it
// runs in disappears (an eviction: the guest was shut down). Migrations change
// status.activePods themselves (planMigration), before the source pod is deleted.
func planVMI(in vmiInput) vmiPlan {
	vmi := in.VMI
	if vmi.DeletionTimestamp != nil || finished(vmi.Status.Phase) {
		return vmiPlan{}
	}
	if len(vmi.Status.ActivePods) > 0 {
		pod := activePod(vmi, in.Pods)
		if podGone(pod) {
			return withStatus(vmiPlan{}, vmi, shutDown(vmi, in.Now))
		}
		return withStatus(vmiPlan{}, vmi, runningStatus(vmi, pod, in.Now))
	}
	// Not started yet: the launcher pod is the one no migration created.
	pod := findPod(in.Pods, func(p *corev1.Pod) bool { return p.Labels[MigrationJobLabel] == "" })
	st := vmi.Status.DeepCopy()
	switch {
	case pod == nil:
		st.Phase = v1.VMIScheduling
		return withStatus(vmiPlan{CreatePod: launcherPod(vmi, in.Image)}, vmi, st)
	case podGone(pod):
		return vmiPlan{} // a deleted pod before start: its name frees up, then it is created again
	case podRunning(pod):
		return withStatus(vmiPlan{}, vmi, runningStatus(vmi, pod, in.Now))
	case pod.Spec.NodeName == "":
		st.Phase = v1.VMIScheduling
	default:
		st.Phase = v1.VMIScheduled
		st.NodeName = pod.Spec.NodeName
	}
	return withStatus(vmiPlan{}, vmi, st)
}

func finished(p v1.VirtualMachineInstancePhase) bool {
	return p == v1.VMISucceeded || p == v1.VMIFailed
}

// withStatus sets p.Status to st unless it equals the VMI's: no needless writes.
func withStatus(p vmiPlan, vmi *v1.VirtualMachineInstance, st *v1.VirtualMachineInstanceStatus) vmiPlan {
	if !equality.Semantic.DeepEqual(&vmi.Status, st) {
		p.Status = st
	}
	return p
}

// runningStatus is the status of a VMI whose guest runs in pod.
func runningStatus(vmi *v1.VirtualMachineInstance, pod *corev1.Pod, now metav1.Time) *v1.VirtualMachineInstanceStatus {
	st := vmi.Status.DeepCopy()
	st.Phase = v1.VMIRunning
	st.NodeName = pod.Spec.NodeName
	st.LauncherContainerImageVersion = computeImage(pod)
	st.ActivePods = map[types.UID]string{pod.UID: pod.Spec.NodeName}
	setCondition(st, v1.VMIConditionReady, corev1.ConditionTrue, "", now)
	if vmi.Labels[NonMigratableLabel] == "true" {
		setCondition(st, v1.VMIConditionLiveMigratable, corev1.ConditionFalse, NotMigratableReason, now)
	} else {
		setCondition(st, v1.VMIConditionLiveMigratable, corev1.ConditionTrue, "", now)
	}
	return st
}

// shutDown is the status of a VMI whose launcher pod went away.
func shutDown(vmi *v1.VirtualMachineInstance, now metav1.Time) *v1.VirtualMachineInstanceStatus {
	st := vmi.Status.DeepCopy()
	st.Phase = v1.VMISucceeded
	setCondition(st, v1.VMIConditionReady, corev1.ConditionFalse, "PodTerminating", now)
	return st
}

// setCondition sets a condition, keeping its transition time when its status
// does not change.
func setCondition(st *v1.VirtualMachineInstanceStatus, t v1.VirtualMachineInstanceConditionType, status corev1.ConditionStatus, reason string, now metav1.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason = status, reason
		return
	}
	st.Conditions = append(st.Conditions, v1.VirtualMachineInstanceCondition{
		Type: t, Status: status, Reason: reason, LastTransitionTime: now,
	})
}
