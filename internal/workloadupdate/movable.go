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

// movable is Movable for the compact forms.
func movable(vmi *VMI, unfinished []*Migration) string {
	choice, raw := ChoiceOf(vmi)
	switch {
	case vmi.Has(Deleting):
		return "being deleted"
	case vmi.Phase != v1.VMIRunning:
		return fmt.Sprintf("not running (phase %s)", orUnset(string(vmi.Phase)))
	case vmi.Evacuation != "":
		return "being evacuated from " + vmi.Evacuation
	case !vmi.Has(LiveMigratable):
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

// fitsNode is FitsNode for the compact form.
func fitsNode(vmi *VMI, node *corev1.Node) string {
	if node == nil {
		return "the node is gone"
	}
	if !usable(node) {
		return "node " + node.Name + " cannot take a migration (not Ready, cordoned, being deleted or marked not schedulable)"
	}
	if vmi.Has(SpecUnreadable) {
		return ""
	}
	p := placementOrNone(vmi.Placement)
	matches, tolerated := fits(p, nodeaffinity.NewRequiredNodeAffinity(p.NodeSelector, p.Affinity), node)
	switch {
	case !matches:
		return "node " + node.Name + " does not match its node selector and affinity"
	case !tolerated:
		return "node " + node.Name + " has a taint it does not tolerate"
	}
	return ""
}

// room is Room for the compact forms: slots are the migrations taking a
// slot, nodeOf the node each VMI runs on.
func (s Settings) room(slots []*Migration, nodeOf func(Key) string, node string) string {
	if n := activeByNode(slots, nodeOf)[node]; s.PerNode > 0 && n >= s.PerNode {
		return fmt.Sprintf("node %s already sends %d migrations, the most spec.workloadUpdates.maxMigrationsPerNode allows (%d)", node, n, s.PerNode)
	}
	limit, field := s.PerCluster, "spec.workloadUpdates.maxMigrationsPerCluster"
	if p := max(s.ParallelMigrations, 0); s.ParallelMigrations != 0 && (limit <= 0 || p < limit) {
		limit, field = p, "parallelMigrationsPerCluster"
	}
	if active := len(slots); (limit > 0 || s.ParallelMigrations < 0) && active >= limit {
		return fmt.Sprintf("%d migrations run in the cluster, the most %s allows (%d)", active, field, limit)
	}
	return ""
}
