package vmsim

import (
	"context"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Podless VMIs (Options.Podless) run on a node without a launcher pod: at
// thousands of VMs the pods' creation, scheduling, kwok's status writes and
// deletion are most of the sandbox's work, and the operator reads launcher pods
// only to evict them. A podless VMI goes Running at once, on NodeAnnotation's node
// or one picked from the sandbox's nodes, with a launcher "pod" that exists only
// in status.activePods. A migration is two writes of the VMI and two of the
// migration: at its start the VMI's migration state (with a target node) and
// Running, at its end the VMI on the target node with the current launcher image,
// and Succeeded (or Failed, as FailMigrationsAnnotation asks). Evictions cannot
// happen: there is no pod to evict.

// podlessVMIInput is what the VMI controller sees of one podless VMI.
type podlessVMIInput struct {
	VMI        *v1.VirtualMachineInstance
	Migrations []v1.VirtualMachineInstanceMigration // those of this VMI
	Nodes      []string                             // the sandbox's nodes, sorted
	Image      string
	Now        metav1.Time
}

// planPodlessVMI makes a new VMI Running, and forgets an unfinished migration
// that was deleted (an abort: no target pod is left to clean up).
func planPodlessVMI(in podlessVMIInput) vmiPlan {
	vmi := in.VMI
	if vmi.DeletionTimestamp != nil || finished(vmi.Status.Phase) {
		return vmiPlan{}
	}
	if ms := vmi.Status.MigrationState; ms != nil && !ms.Completed {
		if slices.ContainsFunc(in.Migrations, func(m v1.VirtualMachineInstanceMigration) bool { return m.UID == ms.MigrationUID }) {
			return vmiPlan{}
		}
		st := vmi.Status.DeepCopy()
		st.MigrationState = nil
		return vmiPlan{Status: st}
	}
	if len(vmi.Status.ActivePods) > 0 {
		return vmiPlan{}
	}
	node := vmi.Annotations[NodeAnnotation]
	if node == "" {
		node = pickNode(in.Nodes, vmi.UID, "")
	}
	if node == "" {
		return vmiPlan{} // no node yet: the node list arrives with the cache
	}
	return withStatus(vmiPlan{}, vmi, podlessRunning(vmi, node, podlessPodUID(vmi.UID), in.Image, in.Now))
}

// podlessRunning is the status of a VMI running on node in a launcher pod that
// only status.activePods knows.
func podlessRunning(vmi *v1.VirtualMachineInstance, node string, pod types.UID, image string, now metav1.Time) *v1.VirtualMachineInstanceStatus {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: pod}, Spec: corev1.PodSpec{NodeName: node,
		Containers: []corev1.Container{{Name: ComputeContainer, Image: image}}}}
	return runningStatus(vmi, p, now)
}

// podlessPodUID names the launcher pod that runs the VMI (or the migration's
// target) in status.activePods.
func podlessPodUID(owner types.UID) types.UID { return "podless-" + owner }

// planPodlessMigration plays a live migration of a podless VMI (see the comment
// at the top of this file); the outcome order is as for planMigration: the VMI
// first, then the migration.
func planPodlessMigration(in migrationInput, nodes []string) migrationPlan {
	m, vmi := in.Migration, in.VMI
	switch {
	case migrationFinished(m.Status.Phase):
		return migrationPlan{}
	case m.DeletionTimestamp != nil:
		return planAbort(m.UID, vmi, nil)
	case vmi == nil:
		return failMigration(in, nil, false)
	}
	ms := vmi.Status.MigrationState
	mine := ms != nil && ms.MigrationUID == m.UID
	switch {
	case mine && ms.Completed && ms.Failed:
		return failMigration(in, nil, false)
	case mine && ms.Completed:
		return withPhase(migrationPlan{}, m, v1.MigrationSucceeded, ms)
	case vmi.DeletionTimestamp != nil || vmi.Status.Phase != v1.VMIRunning || vmi.Labels[NonMigratableLabel] == "true":
		return failMigration(in, nil, false)
	case !mine && ms != nil && !ms.Completed:
		return withPhase(migrationPlan{}, m, v1.MigrationPending, nil)
	case !mine && migrationTarget(m, nodes, vmi.Status.NodeName) == "":
		return failMigration(in, nil, false) // no node matches its addedNodeSelector
	case !mine:
		st := vmi.Status.DeepCopy()
		st.MigrationState = &v1.VirtualMachineInstanceMigrationState{
			MigrationUID: m.UID,
			SourceNode:   vmi.Status.NodeName,
			TargetNode:   migrationTarget(m, nodes, vmi.Status.NodeName),
			TargetPod:    launcherPodName(vmi.Name, m.UID),
			// The API keeps whole seconds: rounded up, a migration never ends early.
			StartTimestamp: ptrTime(metav1.NewTime(in.Now.Truncate(time.Second).Add(time.Second))),
		}
		return withPhase(migrationPlan{VMIStatus: st}, m, v1.MigrationRunning, st.MigrationState)
	}
	if why := in.Refusing[ms.TargetNode]; why != "" {
		return refuseMigration(in, nil, why)
	}
	if wait := ms.StartTimestamp.Add(in.Duration).Sub(in.Now); wait > 0 {
		return withPhase(migrationPlan{RequeueAfter: wait}, m, v1.MigrationRunning, ms)
	}
	if m.Annotations[HoldMigrationAnnotation] == "true" {
		return migrationPlan{}
	}
	if failing(vmi, m.UID) {
		return failMigration(in, nil, vmi.Annotations[FailedMigrationAnnotation] != string(m.UID))
	}
	st := podlessRunning(vmi, ms.TargetNode, podlessPodUID(m.UID), in.Image, metav1.NewTime(in.Now))
	st.MigrationState.Completed = true
	st.MigrationState.EndTimestamp = ptrTime(metav1.NewTime(in.Now))
	return withPhase(migrationPlan{VMIStatus: st}, m, v1.MigrationSucceeded, st.MigrationState)
}

// migrationTarget is the node m moves its VMI to from source: the one its
// addedNodeSelector names by hostname ("" when that is not another of nodes:
// no node can take it; its other keys are not read, the node list has names
// only), else the one its TargetNodeAnnotation names if that is another of
// nodes, else pickNode's.
func migrationTarget(m *v1.VirtualMachineInstanceMigration, nodes []string, source string) string {
	if want, pinned := m.Spec.AddedNodeSelector[corev1.LabelHostname]; pinned {
		if want != source && slices.Contains(nodes, want) {
			return want
		}
		return ""
	}
	if want := m.Annotations[TargetNodeAnnotation]; want != "" && want != source && slices.Contains(nodes, want) {
		return want
	}
	return pickNode(nodes, m.UID, source)
}

// pickNode picks one of nodes for uid, other than avoid when there is another:
// the same node for the same UID, spread evenly over many UIDs.
func pickNode(nodes []string, uid types.UID, avoid string) string {
	candidates := nodes
	if i := slices.Index(nodes, avoid); i >= 0 && len(nodes) > 1 {
		candidates = append(slices.Clone(nodes[:i]), nodes[i+1:]...)
	}
	if len(candidates) == 0 {
		return ""
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(uid))
	return candidates[h.Sum64()%uint64(len(candidates))]
}

// nodeNamesTTL is how long the node list is reused: nodes rarely change, and
// listing a thousand per reconcile would copy them each time.
const nodeNamesTTL = 5 * time.Second

// nodeNames is the sandbox's kwok nodes by name, sorted, listed (metadata only)
// at most once per nodeNamesTTL.
type nodeNames struct {
	mu     sync.Mutex
	cached []string
	at     time.Time
}

func (n *nodeNames) names(ctx context.Context, c client.Reader) ([]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cached != nil && time.Since(n.at) < nodeNamesTTL {
		return n.cached, nil
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := c.List(ctx, list, client.MatchingLabels{kwokNodeLabel: kwokNodeLabelValue}); err != nil {
		return nil, err
	}
	names := make([]string, len(list.Items))
	for i := range list.Items {
		names[i] = list.Items[i].Name
	}
	slices.Sort(names)
	n.cached, n.at = names, time.Now()
	return names, nil
}
