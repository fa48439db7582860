package operator

import (
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// cacheTransform drops, before an object enters the cache, what the operator
// never reads: every object's managedFields (often the largest part of small
// objects); of a VMI its spec but its placement (the workload updater reads its
// node selector, affinity and tolerations to know whether a migration could
// land anywhere; a VMI's spec holds its whole domain), the annotations
// the updater does not read, and its conditions' reasons, messages and probe
// times (the updater reads type and status); of a finished migration what the
// backoff does not read (it reads the phase and when it failed), as finished
// migrations pile up, one or more per VMI and upgrade; of a pod all but its
// node and its containers' names and images (virt-handler's pods, one per node,
// are read for the canary, the pre-pull pods for their pulls); of a node its
// image list and volumes (the canary and the pre-pull read its labels,
// conditions, taints and schedulability).
func cacheTransform() toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	return func(in any) (any, error) {
		out, err := strip(in)
		if err != nil {
			return out, err
		}
		switch o := out.(type) {
		case *v1.VirtualMachineInstance:
			trimVMI(o)
		case *v1.VirtualMachineInstanceMigration:
			if workloadupdate.IsFinished(o) {
				trimFinishedMigration(o)
			}
		case *corev1.Pod:
			o.Spec = corev1.PodSpec{NodeName: o.Spec.NodeName, Containers: namesAndImages(o.Spec.Containers),
				InitContainers: namesAndImages(o.Spec.InitContainers)}
		case *corev1.Node:
			o.Status.Images, o.Status.VolumesInUse, o.Status.VolumesAttached = nil, nil, nil
		}
		return out, nil
	}
}

func trimVMI(vmi *v1.VirtualMachineInstance) {
	vmi.Spec = workloadupdate.PlacementOnly(vmi.Spec)
	var kept map[string]string
	for _, k := range workloadupdate.VMIAnnotations {
		if v, ok := vmi.Annotations[k]; ok {
			if kept == nil {
				kept = map[string]string{}
			}
			kept[k] = v
		}
	}
	vmi.Annotations = kept
	for i, c := range vmi.Status.Conditions {
		vmi.Status.Conditions[i] = v1.VirtualMachineInstanceCondition{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime}
	}
}

// trimFinishedMigration keeps of a Succeeded or Failed migration's status its
// phase, its Failed transition and its migration state's outcome and end.
func trimFinishedMigration(m *v1.VirtualMachineInstanceMigration) {
	st := v1.VirtualMachineInstanceMigrationStatus{Phase: m.Status.Phase}
	if s := m.Status.MigrationState; s != nil {
		st.MigrationState = &v1.VirtualMachineInstanceMigrationState{EndTimestamp: s.EndTimestamp,
			Completed: s.Completed, Failed: s.Failed, MigrationUID: s.MigrationUID}
	}
	for _, t := range m.Status.PhaseTransitionTimestamps {
		if t.Phase == v1.MigrationFailed {
			st.PhaseTransitionTimestamps = []v1.MigrationPhaseTransitionTimestamp{t}
		}
	}
	m.Status = st
}

func namesAndImages(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image}
	}
	return out
}
