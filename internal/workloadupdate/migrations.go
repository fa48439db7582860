package workloadupdate

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Key names a VMI (and the target of a migration) by namespace and name.
type Key struct{ Namespace, Name string }

func (k Key) String() string { return k.Namespace + "/" + k.Name }

// KeyOf is the key of a VMI.
func KeyOf(vmi *v1.VirtualMachineInstance) Key { return Key{vmi.Namespace, vmi.Name} }

// MigrationKey is the key of the VMI a migration targets.
func MigrationKey(m *v1.VirtualMachineInstanceMigration) Key {
	return Key{m.Namespace, m.Spec.VMIName}
}

// IsFinished reports whether a migration reached Succeeded or Failed.
func IsFinished(m *v1.VirtualMachineInstanceMigration) bool {
	return m.Status.Phase == v1.MigrationSucceeded || m.Status.Phase == v1.MigrationFailed
}

// IsWorkloadUpdate reports whether the updater created the migration.
func IsWorkloadUpdate(m *v1.VirtualMachineInstanceMigration) bool {
	_, ok := m.Annotations[WorkloadUpdateMigrationAnnotation]
	return ok
}

// isRunningPhase: the phases in which a migration uses a cluster migration slot.
func isRunningPhase(p v1.VirtualMachineInstanceMigrationPhase) bool {
	switch p {
	case v1.MigrationScheduling, v1.MigrationScheduled, v1.MigrationPreparingTarget,
		v1.MigrationTargetReady, v1.MigrationRunning:
		return true
	}
	return false
}

// Index is what the updater knows about migrations, derived from a list of them.
type Index struct {
	// Unfinished are the unfinished migrations per targeted VMI, in list order.
	Unfinished map[Key][]*v1.VirtualMachineInstanceMigration
	// Finished are the Succeeded and Failed migrations per VMI (the backoff
	// reads them).
	Finished map[Key][]*v1.VirtualMachineInstanceMigration
	// Slots are the migrations taking a migration slot: every migration in a
	// running phase, plus the updater's own unfinished migrations not yet
	// running, and the virt-handler canary's probe's (IsHandlerProbe).
	Slots []*v1.VirtualMachineInstanceMigration
	// Active is len(Slots).
	Active int
}

// IndexMigrations builds the Index. Pointers refer into the given slice.
func IndexMigrations(migs []v1.VirtualMachineInstanceMigration) Index {
	ix := Index{
		Unfinished: map[Key][]*v1.VirtualMachineInstanceMigration{},
		Finished:   map[Key][]*v1.VirtualMachineInstanceMigration{},
	}
	for i := range migs {
		m := &migs[i]
		k := MigrationKey(m)
		if IsFinished(m) {
			ix.Finished[k] = append(ix.Finished[k], m)
			continue
		}
		ix.Unfinished[k] = append(ix.Unfinished[k], m)
		if isRunningPhase(m.Status.Phase) || IsWorkloadUpdate(m) || IsHandlerProbe(m) {
			ix.Slots = append(ix.Slots, m)
		}
	}
	ix.Active = len(ix.Slots)
	return ix
}

// PlanReadsChange: an update from o to n changes what a plan reads of a
// migration: whether it is finished, holds a slot (a running phase, or ours),
// and the node it leaves. A migration's other phase steps and its progress
// fields change no decision; at a few steps per migration, passing them would
// plan once per step for every migration in the cluster.
func PlanReadsChange(o, n *v1.VirtualMachineInstanceMigration) bool {
	return o.UID != n.UID || IsFinished(o) != IsFinished(n) ||
		isRunningPhase(o.Status.Phase) != isRunningPhase(n.Status.Phase) || IsWorkloadUpdate(o) != IsWorkloadUpdate(n) ||
		sourceNode(o, nil) != sourceNode(n, nil) || o.Spec.VMIName != n.Spec.VMIName ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
}

// sourceNode is the node a migration leaves: its migration state's, else the
// node its VMI runs on now.
func sourceNode(m *v1.VirtualMachineInstanceMigration, nodeOf map[Key]string) string {
	if s := m.Status.MigrationState; s != nil && s.SourceNode != "" {
		return s.SourceNode
	}
	return nodeOf[MigrationKey(m)]
}

// NewMigration builds the workload-update migration for vmi. A VMI with a pending
// volume change gets the volume-update label.
func NewMigration(vmi *v1.VirtualMachineInstance, priority v1.MigrationPriority) *v1.VirtualMachineInstanceMigration {
	p := priority
	m := &v1.VirtualMachineInstanceMigration{
		TypeMeta: metav1.TypeMeta{
			APIVersion: v1.GroupVersion.String(),
			Kind:       "VirtualMachineInstanceMigration",
		},
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: MigrationGenerateName,
			Namespace:    vmi.Namespace,
			Annotations:  map[string]string{WorkloadUpdateMigrationAnnotation: ""},
		},
		Spec: v1.VirtualMachineInstanceMigrationSpec{VMIName: vmi.Name, Priority: &p},
	}
	if volumesChanging(vmi) {
		v := vmi.Name
		if len(v) > maxLabelValue {
			v = string(vmi.UID)
		}
		m.Labels = map[string]string{VolumeUpdateMigrationLabel: v}
	}
	return m
}
