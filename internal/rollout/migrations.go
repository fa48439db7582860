package rollout

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	apiv1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

// Migration is an unfinished live migration (a VirtualMachineInstanceMigration
// neither Succeeded nor Failed) as the rollout sees it. virt-handler on its
// source and its target node takes part in it: replacing either pod under it
// fails the migration (upstream's "Cannot migrate VMI in finalized state").
type Migration struct {
	Namespace, Name string
	// SourceNode and TargetNode are where the VMI leaves from and goes to; ""
	// while not known (a pending migration has no target yet).
	SourceNode, TargetNode string
	// StartedAt is when the migration started; Policy.MaxMigrationWait counts
	// from it.
	StartedAt time.Time
}

func (m Migration) String() string { return m.Namespace + "/" + m.Name }

// NodeWait is a node whose virt-handler pod the rollout leaves in place for a
// migration, until the migration finishes or Until, whichever comes first.
type NodeWait struct {
	Node string
	// Migration is namespace/name; of several on the node, the one waited for
	// longest.
	Migration string
	Until     time.Time
}

// MaxListedWaits is how many NodeWaits status.handlerRollout lists (the first
// by node name); nodesWaitingForMigrations counts them all.
const MaxListedWaits = 5

// holds are the nodes unfinished migrations touch, split by
// Policy.MaxMigrationWait: held nodes keep their pod; a node only migrations
// past the wait touch is expired (its pod is replaced, and the Decision says so).
type holds struct {
	held, expired map[string]NodeWait
}

// holdsOf indexes migrations by node at now.
func holdsOf(migrations []Migration, wait time.Duration, now time.Time) holds {
	h := holds{held: map[string]NodeWait{}, expired: map[string]NodeWait{}}
	for _, m := range migrations {
		w := NodeWait{Migration: m.String(), Until: m.StartedAt.Add(wait)}
		for i, node := range []string{m.SourceNode, m.TargetNode} {
			if node == "" || (i == 1 && node == m.SourceNode) {
				continue
			}
			w.Node = node
			into := h.expired
			if now.Before(w.Until) {
				into = h.held
			}
			if prev, ok := into[node]; !ok || w.Until.After(prev.Until) ||
				(w.Until.Equal(prev.Until) && w.Migration < prev.Migration) {
				into[node] = w
			}
		}
	}
	for node := range h.held {
		delete(h.expired, node)
	}
	return h
}

// sortedWaits returns the waits ordered by node name.
func sortedWaits(ws []NodeWait) []NodeWait {
	sort.Slice(ws, func(i, j int) bool { return ws[i].Node < ws[j].Node })
	return ws
}

// waitSummary names the nodes waiting for migrations ("" when none), at most
// MaxListedWaits of them.
func waitSummary(ws []NodeWait, count int) string {
	if count == 0 {
		return ""
	}
	var parts []string
	for _, w := range ws[:min(len(ws), MaxListedWaits)] {
		parts = append(parts, fmt.Sprintf("%s (%s, until %s)", w.Node, w.Migration, w.Until.UTC().Format(time.RFC3339)))
	}
	more := ""
	if shown := min(len(ws), MaxListedWaits); count > shown {
		more = fmt.Sprintf(" and %d more", count-shown)
	}
	return fmt.Sprintf("%d nodes wait for migrations: %s%s", count, strings.Join(parts, ", "), more)
}

// sameWaits: a and b list the same nodes and migrations (as far as the status
// keeps them): a change is progress.
func sameWaits(a, b State) bool {
	if a.WaitingNodes != b.WaitingNodes {
		return false
	}
	la, lb := a.Waits[:min(len(a.Waits), MaxListedWaits)], b.Waits[:min(len(b.Waits), MaxListedWaits)]
	if len(la) != len(lb) {
		return false
	}
	for i := range la {
		if la[i].Node != lb[i].Node || la[i].Migration != lb[i].Migration {
			return false
		}
	}
	return true
}

// expiredNote records that this Decision replaces the pod of node although a
// migration past Policy.MaxMigrationWait still runs there.
func (pl *planner) expiredNote(node string) {
	if w, ok := pl.h.expired[node]; ok {
		pl.d.Expired = append(pl.d.Expired, w)
	}
}

// waitingFor records that node's pod is left in place for its migration.
func (pl *planner) waitingFor(node string) NodeWait {
	w := pl.h.held[node]
	pl.waits = append(pl.waits, w)
	return w
}

// busyOld are the available nodes whose pod is old (not terminating) and that
// an unfinished migration touches, held or past the wait, by name.
func (pl *planner) busyOld() []string {
	var out []string
	for node, pod := range pl.v.byNode {
		_, held := pl.h.held[node]
		_, expired := pl.h.expired[node]
		if (held || expired) && node != "" && pl.v.available(node) && !pl.v.terminatingOn[node] &&
			!metadata.PodIsUpToDate(pod, pl.obs.Target) {
			out = append(out, node)
		}
	}
	sort.Strings(out)
	return out
}

// fastStrategy is the widened rollout's strategy, and its deletions. With no
// unfinished migration on a node whose pod is still to be replaced, it is
// RollingUpdate at the fast step: the DaemonSet controller picks the nodes.
// Otherwise the DaemonSet goes OnDelete and the rollout replaces the pods
// itself, in batches of the fast step, skipping the held nodes (an expired
// one is replaced, and named). Pods the rollout cannot tell apart (every pod
// carries the target, but the DaemonSet still rolls a template out: the
// clean-up of carried-over settings, or a re-check) are held all together
// while any migration holds a node.
func (pl *planner) fastStrategy() *appsv1.DaemonSetUpdateStrategy {
	live := pl.obs.DaemonSet
	if pl.v.old == 0 && len(pl.h.held) > 0 && templateRolling(live) {
		for node := range pl.h.held {
			pl.waitingFor(node)
		}
		pl.onlyMigrations = true
		return OnDelete()
	}
	busy := pl.busyOld()
	if len(busy) == 0 {
		return RollingUpdate(pl.p.FastStep)
	}
	heldOld := 0
	for _, node := range busy {
		if _, held := pl.h.held[node]; held {
			pl.waitingFor(node)
			heldOld++
		}
	}
	v := pl.v
	pl.onlyMigrations = heldOld > 0 && v.oldElsewhere == int32(heldOld) && v.terminatingElsewhere == 0 &&
		v.updatedReadyElsewhere+int32(heldOld+len(v.leftOut)) >= v.desired
	if !pl.obs.Paused && v.observed && live.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
		pl.d.DeletePods = pl.batch()
	}
	return OnDelete()
}

// batch is what the DaemonSet controller would replace now at maxUnavailable
// = the fast step, but for the held nodes: old pods that are not Ready at
// once, Ready ones while fewer pods than the fast step are unavailable; node
// name order. Nodes that are not Ready are left out (their pods follow when
// they are back), and a node whose pod is terminating is being replaced.
func (pl *planner) batch() []string {
	v := pl.v
	maxU, err := intstr.GetScaledValueFromIntOrPercent(&pl.p.FastStep, int(v.desired), true)
	if err != nil || maxU < 1 {
		maxU = 1
	}
	ready := 0
	var nodes []string
	for node, pod := range v.byNode {
		if metadata.PodIsReady(pod) {
			ready++
		}
		nodes = append(nodes, node)
	}
	sort.Strings(nodes)
	unavailable := max(int(v.desired)-ready, 0)
	var out []string
	for _, node := range nodes {
		pod := v.byNode[node]
		_, held := pl.h.held[node]
		if node == "" || held || !v.available(node) || v.terminatingOn[node] || metadata.PodIsUpToDate(pod, pl.obs.Target) {
			continue
		}
		if metadata.PodIsReady(pod) {
			if unavailable >= maxU {
				continue
			}
			unavailable++
		}
		out = append(out, pod.Name)
		pl.expiredNote(node)
	}
	return out
}

// cleanupPending: the DaemonSet has settings carried over to drop (written
// once the rollout has succeeded), or is still rolling that clean template out
// (at the fast step, or held under OnDelete for a migration).
func cleanupPending(live *appsv1.DaemonSet, p Policy) bool {
	if _, carries := live.Annotations[CarriedOverAnnotation]; carries {
		return true
	}
	s := live.Spec.UpdateStrategy
	return templateRolling(live) &&
		(SameStrategy(s, *RollingUpdate(p.FastStep)) || s.Type == appsv1.OnDeleteDaemonSetStrategyType)
}

// holdCleanup holds a succeeded rollout's clean-up (every pod replaced once
// more, see CleanupStrategy) while any migration holds a node: which pods it
// has still to replace cannot be told from their stamps, so every held node
// waits.
func (pl *planner) holdCleanup() {
	if len(pl.h.held) == 0 || !cleanupPending(pl.obs.DaemonSet, pl.p) {
		return
	}
	for node := range pl.h.held {
		pl.waitingFor(node)
	}
	pl.d.CleanupHeld = true
}

// migrationWaitStatus is the status form of the waits.
func migrationWaitStatus(ws []NodeWait) []apiv1.HandlerMigrationWait {
	var out []apiv1.HandlerMigrationWait
	for _, w := range ws[:min(len(ws), MaxListedWaits)] {
		out = append(out, apiv1.HandlerMigrationWait{Node: w.Node, Migration: w.Migration, Until: metav1.NewTime(w.Until)})
	}
	return out
}
