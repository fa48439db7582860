package kubevirt

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apitypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/rollout"
	"github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// vmim is a migration of vmi in namespace default; with nodes, virt-controller
// has scheduled it (migration state with both nodes and a start).
func vmim(name, vmi string, phase v1.VirtualMachineInstanceMigrationPhase, from, to string, start time.Time) *v1.VirtualMachineInstanceMigration {
	m := &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: apitypes.UID("uid-" + name), CreationTimestamp: metav1.NewTime(start)},
		Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: vmi},
		Status:     v1.VirtualMachineInstanceMigrationStatus{Phase: phase},
	}
	if from != "" {
		st := metav1.NewTime(start)
		m.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{SourceNode: from, TargetNode: to, StartTimestamp: &st}
	}
	return m
}

// The handler step reads the unfinished migrations (from the client the cache
// backs): the canary leaves the pod of a node with one in place, says so in
// status (message, migrationWaits, the count) and looks again by the end of
// the wait; a migration that finishes lets the canary go on; one past
// maxMigrationWait is replaced under, with a Warning naming it.
func TestSyncHandlerWaitsForMigrations(t *testing.T) {
	scheme := testScheme(t)
	oldT := metadata.Target{Version: "v1.8.4", Registry: "quay.io/kubevirt", ID: "old"}
	newT := metadata.Target{Version: "v1.9.0", Registry: "quay.io/kubevirt", ID: "new"}
	now := t0.Add(time.Hour)
	live := handlerDaemonSet(oldT)
	live.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberReady: 3}
	objs := []client.Object{live}
	for i := range 3 {
		node := fmt.Sprintf("node-%d", i)
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}})
		objs = append(objs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-handler-" + node, Labels: live.Spec.Selector.MatchLabels,
				Annotations: handlerMarks(oldT)},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "virt-handler"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "virt-handler", Ready: true}}},
		})
	}
	// Every node is busy: node-0 → node-1 running, a pending migration of a VMI
	// on node-2 (no nodes in its status: the VMI says where it runs), and a
	// finished one, which holds nothing.
	running := vmim("running", "vm-a", v1.MigrationRunning, "node-0", "node-1", now.Add(-time.Minute))
	pending := vmim("pending", "vm-b", v1.MigrationPending, "", "", now.Add(-30*time.Second))
	done := vmim("done", "vm-c", v1.MigrationSucceeded, "node-2", "node-0", now.Add(-2*time.Minute))
	vmiB := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm-b"},
		Status: v1.VirtualMachineInstanceStatus{Phase: v1.VMIRunning, NodeName: "node-2"}}
	objs = append(objs, running, pending, done, vmiB)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	r := &Reconciler{Client: c, Namespace: "kubevirt", Recorder: events.NewFakeRecorder(100), Clock: clocktesting.NewFakePassiveClock(now)}
	kv := &v1.KubeVirt{Status: v1.KubeVirtStatus{TargetKubeVirtVersion: newT.Version, TargetKubeVirtRegistry: newT.Registry,
		TargetDeploymentID: newT.ID, ObservedKubeVirtVersion: oldT.Version, ObservedDeploymentID: oldT.ID}}
	cfg := &deployid.Config{KubeVirtVersion: newT.Version, Registry: newT.Registry, ID: newT.ID}
	desired := handlerDaemonSet(newT)
	ctx := context.Background()
	var sc *scope
	pass := func() {
		t.Helper()
		ds := &appsv1.DaemonSet{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(live), ds); err != nil {
			t.Fatal(err)
		}
		ds.Status.ObservedGeneration = ds.Generation
		sc = &scope{kv: kv, cfg: cfg, now: now}
		step := apply.Step{Name: apply.StepVirtHandler, Objects: []client.Object{desired}}
		if _, err := r.syncHandlerStep(ctx, sc, step, map[apply.ObjectRef]client.Object{apply.RefOf(ds): ds}); err != nil {
			t.Fatal(err)
		}
		kv.Status = nextStatus(kv.Status, sc, "")
	}
	podExists := func(node string) bool {
		err := c.Get(ctx, client.ObjectKey{Namespace: "kubevirt", Name: "virt-handler-" + node}, &corev1.Pod{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}

	pass() // Started
	pass() // Canary: every node busy, so the first is the canary and waits
	st := kv.Status.HandlerRollout
	if st.Phase != string(rollout.PhaseCanary) || st.CanaryNode != "node-0" || !podExists("node-0") || !podExists("node-1") || !podExists("node-2") {
		t.Fatalf("canary with every node busy: %+v", st)
	}
	if len(st.MigrationWaits) != 1 || st.MigrationWaits[0].Node != "node-0" || st.MigrationWaits[0].Migration != "default/running" ||
		!st.MigrationWaits[0].Until.Equal(&metav1.Time{Time: now.Add(9 * time.Minute)}) || st.NodesWaitingForMigrations != 1 {
		t.Fatalf("migration waits %+v (%d)", st.MigrationWaits, st.NodesWaitingForMigrations)
	}
	if !strings.Contains(st.Message, "migration default/running to finish") {
		t.Errorf("message %q does not name the migration", st.Message)
	}
	if sc.Requeue <= 0 || sc.Requeue > 9*time.Minute {
		t.Errorf("requeue %s: the end of the wait must bring the rollout back", sc.Requeue)
	}

	// The migration finishes: the canary's pod goes.
	running.Status.Phase = v1.MigrationSucceeded
	if err := c.Update(ctx, running); err != nil {
		t.Fatal(err)
	}
	pass()
	if podExists("node-0") || !podExists("node-1") || !podExists("node-2") || kv.Status.HandlerRollout.NodesWaitingForMigrations != 0 {
		t.Fatalf("after the migration: pods node-0 %v node-1 %v node-2 %v, status %+v", podExists("node-0"), podExists("node-1"),
			podExists("node-2"), kv.Status.HandlerRollout)
	}
	for _, e := range sc.Events {
		if e.Reason == rollout.ReasonMigrationWaitExpired {
			t.Errorf("a Warning for a migration that finished: %s", e.Message)
		}
	}
}

// A migration past spec.handlerRollout.maxMigrationWait does not hold its
// node: the canary's pod is replaced with a Warning Event naming it.
func TestSyncHandlerWarnsPastMaxMigrationWait(t *testing.T) {
	scheme := testScheme(t)
	oldT := metadata.Target{Version: "v1.8.4", Registry: "quay.io/kubevirt", ID: "old"}
	newT := metadata.Target{Version: "v1.9.0", Registry: "quay.io/kubevirt", ID: "new"}
	now := t0.Add(time.Hour)
	live := handlerDaemonSet(newT)
	live.Spec.UpdateStrategy = *rollout.OnDelete()
	live.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, CurrentNumberScheduled: 1}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-handler-node-0", Labels: live.Spec.Selector.MatchLabels, Annotations: handlerMarks(oldT)},
		Spec:       corev1.PodSpec{NodeName: "node-0", Containers: []corev1.Container{{Name: "virt-handler"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "virt-handler", Ready: true}}},
	}
	stuck := vmim("stuck", "vm-a", v1.MigrationRunning, "node-0", "node-0", now.Add(-6*time.Minute))
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(live, pod, stuck, node).Build()
	r := &Reconciler{Client: c, Namespace: "kubevirt", Recorder: events.NewFakeRecorder(100), Clock: clocktesting.NewFakePassiveClock(now)}
	wait := &v1.Duration{Duration: 5 * time.Minute}
	start := metav1.NewTime(now.Add(-time.Minute))
	kv := &v1.KubeVirt{
		Spec: v1.KubeVirtSpec{HandlerRollout: &v1.HandlerRolloutPolicy{MaxMigrationWait: wait}},
		Status: v1.KubeVirtStatus{TargetDeploymentID: newT.ID, ObservedDeploymentID: oldT.ID,
			Generations: []v1.GenerationStatus{handlerGeneration(live)},
			HandlerRollout: &v1.HandlerRolloutStatus{Phase: string(rollout.PhaseCanary), CanaryNode: "node-0", TargetID: newT.ID,
				StartedAt: &start, PhaseChangeAt: &start}},
	}
	ds := live.DeepCopy()
	ds.Status.ObservedGeneration = ds.Generation
	sc := &scope{kv: kv, cfg: &deployid.Config{KubeVirtVersion: newT.Version, Registry: newT.Registry, ID: newT.ID}, now: now}
	step := apply.Step{Name: apply.StepVirtHandler, Objects: []client.Object{handlerDaemonSet(newT)}}
	if _, err := r.syncHandlerStep(context.Background(), sc, step, map[apply.ObjectRef]client.Object{apply.RefOf(ds): ds}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pod), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the pod under a migration past the wait was kept: %v", err)
	}
	var warned []string
	for _, e := range sc.Events {
		if e.Type == eventWarning && e.Reason == rollout.ReasonMigrationWaitExpired {
			warned = append(warned, e.Message)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "node node-0") || !strings.Contains(warned[0], "default/stuck") ||
		!strings.Contains(warned[0], "maxMigrationWait (5m0s") {
		t.Fatalf("warnings %q", warned)
	}
}

// Migration events reach the KubeVirt controller only while its rollout
// reads migrations, and only for updates the rollout reads.
func TestMigrationEventsFilter(t *testing.T) {
	scheme := testScheme(t)
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kv"}}
	for _, tc := range []struct {
		status *v1.HandlerRolloutStatus
		want   bool
	}{
		{nil, false},
		{&v1.HandlerRolloutStatus{Phase: string(rollout.PhaseSuccessful)}, false},
		{&v1.HandlerRolloutStatus{Phase: string(rollout.PhaseFailed)}, false},
		{&v1.HandlerRolloutStatus{Phase: string(rollout.PhaseCanary)}, true},
		{&v1.HandlerRolloutStatus{Phase: string(rollout.PhaseWaiting)}, true},
		{&v1.HandlerRolloutStatus{Phase: string(rollout.PhaseSuccessful), NodesWaitingForMigrations: 2}, true}, // a held clean-up
	} {
		k := kv.DeepCopy()
		k.Status.HandlerRollout = tc.status
		r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(k).Build(), Namespace: "kubevirt"}
		got := r.migrationRequest(context.Background(), &v1.VirtualMachineInstanceMigration{})
		if (len(got) == 1) != tc.want || (tc.want && got[0].Name != "kv") {
			t.Errorf("status %+v: requests %v, want one: %v", tc.status, got, tc.want)
		}
	}

	base := vmim("m", "vm", v1.MigrationRunning, "a", "b", t0)
	for name, tc := range map[string]struct {
		mut  func(*v1.VirtualMachineInstanceMigration)
		want bool
	}{
		"nothing the rollout reads": {func(m *v1.VirtualMachineInstanceMigration) { m.Labels = map[string]string{"x": "y"} }, false},
		"finished":                  {func(m *v1.VirtualMachineInstanceMigration) { m.Status.Phase = v1.MigrationSucceeded }, true},
		"a target node":             {func(m *v1.VirtualMachineInstanceMigration) { m.Status.MigrationState.TargetNode = "c" }, true},
		"a migration state":         {func(m *v1.VirtualMachineInstanceMigration) { m.Status.MigrationState = nil }, true},
	} {
		n := base.DeepCopy()
		tc.mut(n)
		if got := migrationMoved(workloadupdate.CompactMigration(base), workloadupdate.CompactMigration(n)); got != tc.want {
			t.Errorf("%s: moved %v, want %v", name, got, tc.want)
		}
	}
}
