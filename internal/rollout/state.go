package rollout

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apiv1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

// State is what the rollout remembers between reconciles. Phase, the canary, the
// times, the message and TargetID (which target a Failed phase belongs to) live
// in status.handlerRollout; BakedSince has no status field (see
// StateFromStatus). A lost BakedSince only restarts the bake (it is re-derived
// from the pods' Ready condition where present).
type State struct {
	Phase         Phase
	TargetID      string
	CanaryNodes   []string
	CanaryPods    []string
	StartedAt     time.Time
	PhaseChangeAt time.Time
	// ProgressAt is when more pods last got updated or ready, or the phase
	// changed; the deadline counts from it. Updated and Ready are the counts then.
	ProgressAt     time.Time
	Updated, Ready int32
	BakedSince     time.Time
	// Paused: the last Plan held (Observation.Paused); resuming counts as progress.
	Paused  bool
	Message string
	// Waits are the nodes whose pod the rollout leaves in place for an
	// unfinished migration, by node name (read back from status, the first
	// MaxListedWaits); WaitingNodes counts them all. A change is progress.
	Waits        []NodeWait
	WaitingNodes int
	// Checks are the data-plane checks' progress.
	Checks Checks
}

// Observation is everything Plan looks at.
type Observation struct {
	// DaemonSet is the live virt-handler DaemonSet (required).
	DaemonSet *appsv1.DaemonSet
	// Pods are the DaemonSet's pods (owned by it), terminating ones included.
	Pods []corev1.Pod
	// Target is what the DaemonSet's desired pod template is stamped with
	// (metadata.TemplateTarget): its pods are current when they carry it. It
	// is the deployment's version, registry and ID when the template changes,
	// the running template's when only other inputs changed (nothing restarts).
	Target metadata.Target
	// Previous is the stored state; nil when none is stored.
	Previous *State
	// SpecChanged: the live DaemonSet is not the desired one (annotations or
	// metadata differ). Only this restarts the canary.
	SpecChanged bool
	// GenerationUnknown: the live generation is not the recorded one.
	GenerationUnknown bool
	// NodeReady is every node by name, true when it is Ready; nil when unknown
	// (every node then counts as available).
	NodeReady map[string]bool
	// Paused holds the rollout: no pod is deleted for the canary, the rollout
	// does not widen, and a widened one updates no further pods (OnDelete);
	// pods being replaced finish, and the deadline does not run.
	Paused bool
	// Migrations are the unfinished live migrations. A node one of them
	// leaves from or goes to keeps its virt-handler pod until the migration
	// finishes, or Policy.MaxMigrationWait after its start: it is never
	// deleted for the canary (and picked as one only when no other node can
	// be), and while such a node's pod is still old the widened rollout
	// replaces pods itself under OnDelete, skipping it.
	Migrations []Migration
	// DataPlane is what the data-plane checks read; nil unless
	// NeedsDataPlane (a check that needs it and lacks it waits).
	DataPlane *DataPlane
	Now       time.Time
}

// StateFromStatus reads the stored state. targetID is the target the stored
// status belongs to, if the controller keeps it (empty: unknown, in which case a
// Failed rollout is retried when the spec still differs).
func StateFromStatus(s *apiv1.HandlerRolloutStatus, targetID string) *State {
	if s == nil {
		return nil
	}
	st := &State{Phase: Phase(s.Phase), TargetID: targetID, Message: s.Message, Paused: s.Paused,
		CanaryNodes: splitList(s.CanaryNode), CanaryPods: splitList(s.CanaryPod)}
	if s.StartedAt != nil {
		st.StartedAt = s.StartedAt.Time
	}
	if s.PhaseChangeAt != nil {
		st.PhaseChangeAt = s.PhaseChangeAt.Time
	}
	st.ProgressAt, st.Updated, st.Ready = st.PhaseChangeAt, s.UpdatedPods, s.ReadyPods
	if s.LastProgressAt != nil {
		st.ProgressAt = s.LastProgressAt.Time
	}
	for _, w := range s.MigrationWaits {
		st.Waits = append(st.Waits, NodeWait{Node: w.Node, Migration: w.Migration, Until: w.Until.Time})
	}
	st.WaitingNodes = max(int(s.NodesWaitingForMigrations), len(st.Waits))
	st.Checks = checksFromStatus(s)
	return st
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func timePtr(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t)
	return &mt
}

// view is the pods of the DaemonSet, counted once.
type view struct {
	desired, updated, updatedReady, old int32
	terminating                         int32
	byNode                              map[string]*corev1.Pod // non-terminating pod per node
	terminatingOn                       map[string]bool
	crashed                             []*corev1.Pod // crash-looping updated pods, by name
	observed                            bool          // the DaemonSet controller saw the current spec
	firstUpdated                        time.Time     // earliest creation of an updated pod
	// nodeReady is Observation.NodeReady; unavailable nodes (not Ready, or gone)
	// are never canaries and do not hold the rollout's completion.
	nodeReady map[string]bool
	// leftOut are the unavailable nodes with a pod not (yet) on the target or
	// not ready, sorted; oldElsewhere and terminatingElsewhere count the rest.
	leftOut                            []string
	oldElsewhere, terminatingElsewhere int32
	updatedReadyElsewhere              int32
	// held and expired are the nodes unfinished migrations touch (holds).
	held, expired map[string]NodeWait
}

// available: the node exists and is Ready (or nothing is known about nodes).
func (v view) available(node string) bool {
	if v.nodeReady == nil {
		return true
	}
	return v.nodeReady[node]
}

func newView(obs Observation) view {
	ds := obs.DaemonSet
	v := view{
		desired:       ds.Status.DesiredNumberScheduled,
		byNode:        map[string]*corev1.Pod{},
		terminatingOn: map[string]bool{},
		observed:      ds.Status.ObservedGeneration >= ds.Generation,
		nodeReady:     obs.NodeReady,
	}
	for i := range obs.Pods {
		pod := &obs.Pods[i]
		if pod.DeletionTimestamp != nil {
			v.terminating++
			v.terminatingOn[pod.Spec.NodeName] = true
			continue
		}
		v.byNode[pod.Spec.NodeName] = pod
		if !metadata.PodIsUpToDate(pod, obs.Target) {
			v.old++
			continue
		}
		v.updated++
		if c := pod.CreationTimestamp.Time; v.firstUpdated.IsZero() || c.Before(v.firstUpdated) {
			v.firstUpdated = c
		}
		if metadata.PodIsReady(pod) {
			v.updatedReady++
		}
		if metadata.PodIsCrashLooping(pod) {
			v.crashed = append(v.crashed, pod)
		}
	}
	sort.Slice(v.crashed, func(i, j int) bool { return v.crashed[i].Name < v.crashed[j].Name })
	v.splitByAvailability(obs)
	return v
}

// splitByAvailability counts the pods on available nodes apart and lists the
// unavailable nodes whose pod is not updated and ready.
func (v *view) splitByAvailability(obs Observation) {
	left := map[string]bool{}
	for i := range obs.Pods {
		pod := &obs.Pods[i]
		node := pod.Spec.NodeName
		onTarget := metadata.PodIsUpToDate(pod, obs.Target)
		proven := onTarget && metadata.PodIsReady(pod) && pod.DeletionTimestamp == nil
		switch {
		case node != "" && !v.available(node) && !proven:
			left[node] = true
		case pod.DeletionTimestamp != nil:
			v.terminatingElsewhere++
		case !onTarget:
			v.oldElsewhere++
		case metadata.PodIsReady(pod):
			v.updatedReadyElsewhere++
		}
	}
	for node := range left {
		v.leftOut = append(v.leftOut, node)
	}
	sort.Strings(v.leftOut)
}

// clockSkew is how much earlier than the rollout's start (operator clock) a pod
// may have been created (API server clock) and still belong to the rollout.
const clockSkew = 30 * time.Second

// crashesSince are the crash-looping updated pods created for this rollout,
// by name. A pod created before the rollout started (restartCount never
// resets) is judged by the rollout that created it, so an old restart never
// fails a later rollout. A pod without a creation time is judged.
func (v view) crashesSince(startedAt time.Time) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range v.crashed {
		if c := pod.CreationTimestamp.Time; c.IsZero() || !c.Before(startedAt.Add(-clockSkew)) {
			out = append(out, pod)
		}
	}
	return out
}

// allDone: every desired pod is updated and ready, nothing old or terminating is
// left, and the counts are for the DaemonSet's current spec.
func (v view) allDone() bool {
	if len(v.leftOut) == 0 {
		return v.observed && v.old == 0 && v.terminating == 0 && v.updatedReady == v.desired
	}
	// Nodes that are not Ready cannot run the new pod: the rollout is done when
	// every other node does (and at least one does); the rest are named.
	return v.observed && v.oldElsewhere == 0 && v.terminatingElsewhere == 0 && v.updatedReadyElsewhere > 0 &&
		v.updatedReadyElsewhere+int32(len(v.leftOut)) >= v.desired
}

// leftOutSummary names the unavailable nodes the rollout left out, at most five.
func (v view) leftOutSummary() string {
	names := v.leftOut
	more := ""
	if len(names) > 5 {
		names, more = names[:5], fmt.Sprintf(" and %d more", len(v.leftOut)-5)
	}
	return fmt.Sprintf("%d nodes left out, not Ready: %s%s", len(v.leftOut), strings.Join(names, ", "), more)
}

// pickCanaries chooses up to n nodes besides those already chosen (and never
// one of them), deterministically: nodes already running
// the target first (a resumed canary), then old pods that are Ready, then the
// rest, each in node-name order; nodes an unfinished migration touches come
// last (past its wait, then held: a held node only when no other can be, and
// its pod then waits for the migration). A pod not scheduled yet, or on a node that is
// not Ready or gone, is never a canary (it would hold the rollout forever); a
// NotReady pod on a Ready node is picked only when too few are Ready (a broken
// running version must still be upgradable).
func (v view) pickCanaries(n int, target metadata.Target, chosen ...string) []string {
	var groups [5][]string // updated, old Ready, old not Ready, old past a migration's wait, old held
	for node, pod := range v.byNode {
		_, held := v.held[node]
		_, expired := v.expired[node]
		switch {
		case node == "" || !v.available(node) || slices.Contains(chosen, node):
		case metadata.PodIsUpToDate(pod, target):
			groups[0] = append(groups[0], node)
		case held:
			groups[4] = append(groups[4], node)
		case expired:
			groups[3] = append(groups[3], node)
		case metadata.PodIsReady(pod):
			groups[1] = append(groups[1], node)
		default:
			groups[2] = append(groups[2], node)
		}
	}
	var nodes []string
	for _, g := range groups {
		sort.Strings(g)
		nodes = append(nodes, g...)
	}
	if want := n - len(chosen); len(nodes) > want {
		nodes = nodes[:max(want, 0)]
	}
	return nodes
}

// readySince is when the pod last turned Ready, from its Ready condition; zero
// when the pod does not say.
func readySince(pod *corev1.Pod) time.Time {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// restartSummary says which container of a crashed pod failed and how.
func restartSummary(pod *corev1.Pod) string {
	if c := metadata.CrashedContainer(pod); c != nil {
		return fmt.Sprintf("container %s failed (restartCount %d)", c.Name, c.RestartCount)
	}
	return "a container failed"
}
