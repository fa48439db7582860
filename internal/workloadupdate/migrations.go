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

// takesSlot: the migration counts against the migration caps: it runs, or it
// is the updater's own or the canary probe's and not finished yet.
func (m *Migration) takesSlot() bool {
	return !m.Finished() && (isRunningPhase(m.Phase) || m.WorkloadUpdate || m.IsProbe)
}

// Migrations are the cluster's migrations as a plan reads them: every
// unfinished one, and the finished ones of a VMI on request (the backoff
// reads those of the VMIs it would migrate). The cache keeps both indexed,
// so a plan copies no migration: finished ones pile up, one or more per VMI
// and upgrade.
type Migrations struct {
	// Unfinished are the migrations neither Succeeded nor Failed.
	Unfinished []*Migration
	// Finished returns a VMI's Succeeded and Failed migrations; nil reads as
	// none.
	Finished func(Key) []*Migration
}

// MigrationsOf splits a list of migrations (the tests', the plan command's).
func MigrationsOf(all []*Migration) Migrations {
	finished := map[Key][]*Migration{}
	var out Migrations
	for _, m := range all {
		if m.Finished() {
			finished[m.Key()] = append(finished[m.Key()], m)
			continue
		}
		out.Unfinished = append(out.Unfinished, m)
	}
	out.Finished = func(k Key) []*Migration { return finished[k] }
	return out
}

func (ms Migrations) finished(k Key) []*Migration {
	if ms.Finished == nil {
		return nil
	}
	return ms.Finished(k)
}

// inFlight is what a plan reads of the unfinished migrations.
type inFlight struct {
	// byVMI are the unfinished migrations per targeted VMI, in list order.
	byVMI map[Key][]*Migration
	// slots are the migrations taking a migration slot (takesSlot).
	slots []*Migration
}

func indexUnfinished(unfinished []*Migration) inFlight {
	ix := inFlight{byVMI: make(map[Key][]*Migration, len(unfinished))}
	for _, m := range unfinished {
		if m.Finished() { // a caller's list may hold any; be safe
			continue
		}
		ix.byVMI[m.Key()] = append(ix.byVMI[m.Key()], m)
		if m.takesSlot() {
			ix.slots = append(ix.slots, m)
		}
	}
	return ix
}

// PlanReadsChange: an update from o to n changes what a plan reads of a
// migration: whether it is finished, holds a slot (a running phase, or ours),
// and the node it leaves. A migration's other phase steps and its progress
// fields change no decision; at a few steps per migration, passing them would
// plan once per step for every migration in the cluster.
func PlanReadsChange(o, n *Migration) bool {
	return o.UID != n.UID || o.Finished() != n.Finished() ||
		isRunningPhase(o.Phase) != isRunningPhase(n.Phase) || o.WorkloadUpdate != n.WorkloadUpdate ||
		stateSource(o.State) != stateSource(n.State) || o.VMI != n.VMI || o.Deleting != n.Deleting
}

// sourceNode is the node a migration leaves: its migration state's, else the
// node its VMI runs on now.
func sourceNode(m *Migration, nodeOf func(Key) string) string {
	if s := stateSource(m.State); s != "" {
		return s
	}
	return nodeOf(m.Key())
}

func stateSource(s *MigrationState) string {
	if s == nil {
		return ""
	}
	return s.Source
}

// NewMigration builds the workload-update migration for vmi. A VMI with a pending
// volume change gets the volume-update label.
func NewMigration(vmi *VMI, priority v1.MigrationPriority) *v1.VirtualMachineInstanceMigration {
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
	if vmi.Has(VolumesChange) {
		v := vmi.Name
		if len(v) > maxLabelValue {
			v = string(vmi.UID)
		}
		m.Labels = map[string]string{VolumeUpdateMigrationLabel: v}
	}
	return m
}
