package vmsim

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Fixtures: VMI "vm" (UID vmi-uid) running in pod "source" on node-a with image v1;
// migration "mig" (UID mig-uid) moving it to pod "target" on node-b with image v2.
const (
	imageV1 = "launcher:v1"
	imageV2 = "launcher:v2"
	vmiUID  = types.UID("vmi-uid")
	migUID  = types.UID("mig-uid")
)

var (
	t0  = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now = metav1.NewTime(t0)
)

func newVMI(phase v1.VirtualMachineInstancePhase, edits ...func(*v1.VirtualMachineInstance)) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns", UID: vmiUID},
		Status:     v1.VirtualMachineInstanceStatus{Phase: phase},
	}
	for _, e := range edits {
		e(vmi)
	}
	return vmi
}

// runningOn makes the VMI Running in pod as the VMI controller would have.
func runningOn(pod corev1.Pod) func(*v1.VirtualMachineInstance) {
	return func(vmi *v1.VirtualMachineInstance) { vmi.Status = *runningStatus(vmi, &pod, now) }
}

func labelled(k, v string) func(*v1.VirtualMachineInstance) {
	return func(vmi *v1.VirtualMachineInstance) {
		if vmi.Labels == nil {
			vmi.Labels = map[string]string{}
		}
		vmi.Labels[k] = v
	}
}

func annotated(k, v string) func(*v1.VirtualMachineInstance) {
	return func(vmi *v1.VirtualMachineInstance) {
		if vmi.Annotations == nil {
			vmi.Annotations = map[string]string{}
		}
		vmi.Annotations[k] = v
	}
}

func withMigrationState(ms v1.VirtualMachineInstanceMigrationState) func(*v1.VirtualMachineInstance) {
	return func(vmi *v1.VirtualMachineInstance) { vmi.Status.MigrationState = &ms }
}

// pod is a launcher pod of the VMI on node (""=unscheduled) in phase.
func pod(name, uid, node string, phase corev1.PodPhase, image string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(uid), Labels: map[string]string{
			AppLabel: LauncherApp, CreatedByLabel: string(vmiUID), VMNameLabel: "vm",
		}},
		Spec:   corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: ComputeContainer, Image: image}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func terminating(p corev1.Pod) corev1.Pod {
	p.DeletionTimestamp = &now
	return p
}

var (
	sourcePod = pod("source", "source-uid", "node-a", corev1.PodRunning, imageV1)
	// targetAt is the migration's target pod, started at start.
	targetAt = func(node string, phase corev1.PodPhase, start time.Time) corev1.Pod {
		p := pod("target", "target-uid", node, phase, imageV2)
		p.Labels[MigrationJobLabel] = string(migUID)
		p.Annotations = map[string]string{
			MigrationAnnotation: "mig", SourcePodAnnotation: "source", MigrationStartAnnotation: start.Format(time.RFC3339Nano),
		}
		return p
	}
)

// newMigration is the migration in phase; from Scheduled on it carries the
// migration state the simulator mirrors from the VMI.
func newMigration(phase v1.VirtualMachineInstanceMigrationPhase) *v1.VirtualMachineInstanceMigration {
	m := &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "mig", Namespace: "ns", UID: migUID, CreationTimestamp: metav1.NewTime(t0.Add(-time.Second))},
		Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: "vm"},
		Status:     v1.VirtualMachineInstanceMigrationStatus{Phase: phase},
	}
	if phaseIndex(phase) >= phaseIndex(v1.MigrationScheduled) {
		m.Status.MigrationState = started.DeepCopy()
	}
	return m
}

// started is the VMI's migration state once the target is scheduled.
var started = v1.VirtualMachineInstanceMigrationState{
	MigrationUID: migUID, SourceNode: "node-a", TargetNode: "node-b", TargetPod: "target", StartTimestamp: &now,
}
