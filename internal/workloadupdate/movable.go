package workloadupdate

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// The virt-handler canary's migration probe (internal/rollout) moves VMIs
// the updater did not choose. It asks this package the updater's own
// questions, so the two never disagree on what may move: whether a VMI may be
// live-migrated at all, whether it fits a given node, and whether the
// migration caps leave room for one more migration from a node. Its
// migrations carry HandlerProbeLabel, and take a slot as the updater's own do.

// HandlerProbeLabel marks a migration of the virt-handler canary's migration
// probe; the value identifies the rollout.
const HandlerProbeLabel = "kubevirt.io/virt-operator-handler-probe"

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
	choice, raw := ChoiceOf(vmi)
	switch {
	case vmi.DeletionTimestamp != nil:
		return "being deleted"
	case vmi.Status.Phase != v1.VMIRunning:
		return fmt.Sprintf("not running (phase %s)", orUnset(string(vmi.Status.Phase)))
	case vmi.Status.EvacuationNodeName != "":
		return "being evacuated from " + vmi.Status.EvacuationNodeName
	case !isTrue(vmi, v1.VMIConditionLiveMigratable):
		return "not live-migratable"
	case choice == ChoiceNone || choice == ChoiceEvict || choice == ChoiceInvalid:
		return fmt.Sprintf("opted out of migrations (%s=%s)", ChoiceKey, raw)
	case migrating(vmi) || len(unfinished) > 0:
		return "already migrating"
	}
	return ""
}

func orUnset(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}

// FitsNode is "" when a migration of vmi could land on node, else why not:
// the node must be usable (Ready, not cordoned, not being deleted, not
// marked kubevirt.io/schedulable=false), match the VMI's node selector and
// required affinity, and carry no scheduling taint the VMI does not tolerate.
// A spec that cannot be read is taken as fitting, as Targets does (the
// migration itself will say what is wrong with it).
func FitsNode(vmi *v1.VirtualMachineInstance, node *corev1.Node) string {
	if node == nil {
		return "the node is gone"
	}
	if !usable(node) {
		return "node " + node.Name + " cannot take a migration (not Ready, cordoned, being deleted or marked not schedulable)"
	}
	p, err := PlacementOf(vmi.Spec)
	if err != nil {
		return ""
	}
	matches, tolerated := fits(p, nodeaffinity.NewRequiredNodeAffinity(p.NodeSelector, p.Affinity), node)
	switch {
	case !matches:
		return "node " + node.Name + " does not match its node selector and affinity"
	case !tolerated:
		return "node " + node.Name + " has a taint it does not tolerate"
	}
	return ""
}

// Room is "" when one more migration leaving node may start now under s's
// caps, else why not: the node sends fewer than PerNode migrations, and the
// cluster runs fewer than the cluster cap the admin set (PerCluster, else
// parallelMigrationsPerCluster; the updater's default cap, derived from the
// nodes with outdated VMIs, is its drain's pace, not a limit on others).
// Migrations count as the updater counts them (Index.Slots), vmis give the
// node a pending migration leaves.
func (s Settings) Room(ix Index, vmis []v1.VirtualMachineInstance, node string) string {
	if n := activeByNode(ix, vmis)[node]; s.PerNode > 0 && n >= s.PerNode {
		return fmt.Sprintf("node %s already sends %d migrations, the most spec.workloadUpdates.maxMigrationsPerNode allows (%d)", node, n, s.PerNode)
	}
	limit, field := s.PerCluster, "spec.workloadUpdates.maxMigrationsPerCluster"
	if p := max(s.ParallelMigrations, 0); s.ParallelMigrations != 0 && (limit <= 0 || p < limit) {
		limit, field = p, "parallelMigrationsPerCluster"
	}
	if (limit > 0 || s.ParallelMigrations < 0) && ix.Active >= limit {
		return fmt.Sprintf("%d migrations run in the cluster, the most %s allows (%d)", ix.Active, field, limit)
	}
	return ""
}
