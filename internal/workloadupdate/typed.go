package workloadupdate

import (
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// The virt-handler canary's migration probe (internal/rollout) asks with the
// API types: these answer through the compact forms, so the two readings
// cannot drift apart.

// IsHandlerProbe reports whether the canary's migration probe created the migration.
func IsHandlerProbe(m *v1.VirtualMachineInstanceMigration) bool {
	_, ok := m.Labels[HandlerProbeLabel]
	return ok
}

// Movable is "" when vmi may be live-migrated now by someone other than its
// owner, else why not: it must be Running and not being deleted or
// evacuated, report LiveMigratable=True, not be migrating (by its migration
// state, or an unfinished migration in unfinished), and not be opted out of
// moves by its choice (ChoiceKey None or Evict, or a value that means
// nothing: the VM's owner said it must not be migrated).
func Movable(vmi *v1.VirtualMachineInstance, unfinished []*v1.VirtualMachineInstanceMigration) string {
	return movable(CompactVMI(vmi), compactAll(unfinished))
}

// FitsNode is "" when a migration of vmi could land on node, else why not:
// the node must be usable (Ready, not cordoned, not being deleted, not
// marked kubevirt.io/schedulable=false), match the VMI's node selector and
// required affinity, and carry no scheduling taint the VMI does not tolerate.
// A spec that cannot be read is taken as fitting, as Targets does (the
// migration itself will say what is wrong with it).
func FitsNode(vmi *v1.VirtualMachineInstance, node *corev1.Node) string {
	return fitsNode(CompactVMI(vmi), node)
}

// Index is what the probe knows about migrations, derived from a list of them.
type Index struct {
	// Unfinished are the unfinished migrations per targeted VMI, in list order.
	Unfinished map[Key][]*v1.VirtualMachineInstanceMigration
	// Finished are the Succeeded and Failed migrations per VMI.
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
		if CompactMigration(m).takesSlot() {
			ix.Slots = append(ix.Slots, m)
		}
	}
	ix.Active = len(ix.Slots)
	return ix
}

// Room is "" when one more migration leaving node may start now under s's
// caps, else why not: the node sends fewer than PerNode migrations, and the
// cluster runs fewer than the cluster cap the admin set (PerCluster, else
// parallelMigrationsPerCluster; the updater's default cap, derived from the
// nodes with outdated VMIs, is its drain's pace, not a limit on others).
// Migrations count as the updater counts them (Index.Slots), vmis give the
// node a pending migration leaves.
func (s Settings) Room(ix Index, vmis []v1.VirtualMachineInstance, node string) string {
	nodes := make(map[Key]string, len(vmis))
	for i := range vmis {
		nodes[KeyOf(&vmis[i])] = vmis[i].Status.NodeName
	}
	return s.room(compactAll(ix.Slots), func(k Key) string { return nodes[k] }, node)
}

func compactAll(migs []*v1.VirtualMachineInstanceMigration) []*Migration {
	out := make([]*Migration, len(migs))
	for i, m := range migs {
		out[i] = CompactMigration(m)
	}
	return out
}

// CompactVMIs and CompactMigrations are the compact forms of lists (the plan
// command's and the tests' input).
func CompactVMIs(vmis []v1.VirtualMachineInstance) []*VMI {
	out := make([]*VMI, len(vmis))
	for i := range vmis {
		out[i] = CompactVMI(&vmis[i])
	}
	return out
}

// CompactMigrations: see CompactVMIs.
func CompactMigrations(migs []v1.VirtualMachineInstanceMigration) []*Migration {
	out := make([]*Migration, len(migs))
	for i := range migs {
		out[i] = CompactMigration(&migs[i])
	}
	return out
}
