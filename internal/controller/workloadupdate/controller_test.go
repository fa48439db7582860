package workloadupdate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/workloadcache"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

const oldLauncher = "quay.io/kubevirt/virt-launcher:old"

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

// deployedKubeVirt is a CR whose upgrade is done: the gate is open.
func deployedKubeVirt(spec v1.KubeVirtSpec) *v1.KubeVirt {
	cfg := &deployid.Config{Namespace: "kubevirt", Registry: "quay.io/kubevirt", KubeVirtVersion: "v2"}
	cfg.ID = cfg.ComputeID()
	return &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"}, Spec: spec,
		Status: v1.KubeVirtStatus{Phase: v1.KubeVirtPhaseDeployed, TargetDeploymentConfig: cfg.JSON(),
			TargetDeploymentID: cfg.ID, ObservedDeploymentID: cfg.ID}}
}

func outdatedVMI(name, node string, labels map[string]string) *v1.VirtualMachineInstance {
	return &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "vms", Labels: labels, CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
		Status: v1.VirtualMachineInstanceStatus{Phase: v1.VMIRunning, NodeName: node, LauncherContainerImageVersion: oldLauncher,
			Conditions: []v1.VirtualMachineInstanceCondition{{Type: v1.VMIConditionLiveMigratable, Status: corev1.ConditionTrue}}},
	}
}

type harness struct {
	t   *testing.T
	c   client.Client
	r   *Reconciler
	rec *events.FakeRecorder
}

// readyNode is a node a migration can land on.
func readyNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

// newHarness runs the reconciler on a fake client holding objs and kv, and
// three Ready nodes a, b and c unless objs hold nodes.
func newHarness(t *testing.T, kv *v1.KubeVirt, objs ...client.Object) *harness {
	if !slices.ContainsFunc(objs, func(o client.Object) bool { _, ok := o.(*corev1.Node); return ok }) {
		objs = append(objs, readyNode("a"), readyNode("b"), readyNode("c"))
	}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(append(objs, kv)...).
		WithStatusSubresource(&v1.KubeVirt{}).Build()
	rec := events.NewFakeRecorder(100)
	r := &Reconciler{Client: c, APIReader: c, Workloads: workloadcache.Reader{Client: c}, Namespace: "kubevirt", Recorder: rec,
		Clock: clocktesting.NewFakePassiveClock(t0)}
	r.init()
	return &harness{t: t, c: c, r: r, rec: rec}
}

func (h *harness) reconcile() reconcile.Result {
	h.t.Helper()
	res, err := h.r.Reconcile(context.Background(), reconcile.Request{})
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

func (h *harness) migrations() []v1.VirtualMachineInstanceMigration {
	h.t.Helper()
	list := &v1.VirtualMachineInstanceMigrationList{}
	if err := h.c.List(context.Background(), list); err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

func (h *harness) status() *v1.KubeVirt {
	h.t.Helper()
	kv := &v1.KubeVirt{}
	if err := h.c.Get(context.Background(), client.ObjectKey{Namespace: "kubevirt", Name: "kubevirt"}, kv); err != nil {
		h.t.Fatal(err)
	}
	return kv
}

// events drains the recorded events.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

var ours = &v1.WorkloadUpdatePolicy{Methods: []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate}}

func fourVMIs() []client.Object {
	return []client.Object{outdatedVMI("a1", "a", nil), outdatedVMI("a2", "a", nil), outdatedVMI("a3", "a", nil), outdatedVMI("b1", "b", nil)}
}

func TestReconcileActsOnlyAsTheActor(t *testing.T) {
	t.Run("ours: paced migrations, status says virt-operator", func(t *testing.T) {
		h := newHarness(t, deployedKubeVirt(v1.KubeVirtSpec{WorkloadUpdates: ours}), fourVMIs()...)
		h.reconcile()
		if n := len(h.migrations()); n != 2 {
			t.Fatalf("%d migrations, want one per node (2)", n)
		}
		kv := h.status()
		w := kv.Status.WorkloadUpdates
		if w == nil || w.Actor != v1.ActorVirtOperator || w.Outdated != 4 || w.MigrationsCreated != 2 || w.Blocked != "" {
			t.Fatalf("status.workloadUpdates %+v", w)
		}
		if kv.Status.OutdatedVirtualMachineInstanceWorkloads != nil {
			t.Fatal("the operator wrote virt-controller's outdatedVirtualMachineInstanceWorkloads")
		}
	})
	t.Run("upstream's field: nothing moved, counted, virt-controller named", func(t *testing.T) {
		spec := v1.KubeVirtSpec{WorkloadUpdateStrategy: v1.KubeVirtWorkloadUpdateStrategy{
			WorkloadUpdateMethods: []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate, v1.WorkloadUpdateMethodEvict}}}
		h := newHarness(t, deployedKubeVirt(spec), fourVMIs()...)
		if res := h.reconcile(); res.RequeueAfter != 0 {
			t.Fatalf("counting needs no resync, got %v", res.RequeueAfter)
		}
		if n := len(h.migrations()); n != 0 {
			t.Fatalf("%d migrations beside virt-controller", n)
		}
		w := h.status().Status.WorkloadUpdates
		if w.Actor != v1.ActorVirtController || w.Outdated != 4 || !strings.Contains(w.Blocked, "virt-controller moves the VMs") {
			t.Fatalf("status.workloadUpdates %+v", w)
		}
		if evs := h.events(); len(evs) != 0 {
			t.Fatalf("events while only counting: %v", evs)
		}
	})
	t.Run("both (an old CR): virt-controller, ours said to be ignored", func(t *testing.T) {
		spec := v1.KubeVirtSpec{WorkloadUpdates: ours, WorkloadUpdateStrategy: v1.KubeVirtWorkloadUpdateStrategy{
			WorkloadUpdateMethods: []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate}}}
		h := newHarness(t, deployedKubeVirt(spec), fourVMIs()...)
		h.reconcile()
		if w := h.status().Status.WorkloadUpdates; len(h.migrations()) != 0 || !strings.Contains(w.Blocked, "spec.workloadUpdates is ignored") {
			t.Fatalf("%d migrations, status %+v", len(h.migrations()), w)
		}
	})
	t.Run("paused: nothing starts, status says paused", func(t *testing.T) {
		policy := ours.DeepCopy()
		policy.Paused = true
		h := newHarness(t, deployedKubeVirt(v1.KubeVirtSpec{WorkloadUpdates: policy}), fourVMIs()...)
		h.reconcile()
		w := h.status().Status.WorkloadUpdates
		if len(h.migrations()) != 0 || !w.Paused || !strings.HasPrefix(w.Blocked, "paused") || w.WaitingForMigration != 4 {
			t.Fatalf("%d migrations, status %+v", len(h.migrations()), w)
		}
	})
	t.Run("closed window: nothing starts, the next opening in status", func(t *testing.T) {
		policy := ours.DeepCopy()
		policy.Windows = []v1.MaintenanceWindow{{Start: "22:00", Duration: v1.Duration{Duration: time.Hour}}}
		h := newHarness(t, deployedKubeVirt(v1.KubeVirtSpec{WorkloadUpdates: policy}), fourVMIs()...)
		h.reconcile()
		w := h.status().Status.WorkloadUpdates
		if len(h.migrations()) != 0 || w.Window == nil || w.Window.Open || w.Window.NextOpen == nil ||
			!w.Window.NextOpen.Time.Equal(t0.Add(10*time.Hour)) {
			t.Fatalf("%d migrations, window %+v", len(h.migrations()), w.Window)
		}
	})
}

func failedMigration(name, vmi string, at time.Time) *v1.VirtualMachineInstanceMigration {
	return &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "vms", UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(at),
			Annotations: map[string]string{core.WorkloadUpdateMigrationAnnotation: ""}},
		Spec:   v1.VirtualMachineInstanceMigrationSpec{VMIName: vmi},
		Status: v1.VirtualMachineInstanceMigrationStatus{Phase: v1.MigrationFailed},
	}
}

func TestReconcileAnnouncesALastingStateOnce(t *testing.T) {
	objs := []client.Object{
		outdatedVMI("stuck", "a", nil),
		outdatedVMI("typo", "b", map[string]string{core.ChoiceKey: "Restart"}),
		failedMigration("f1", "stuck", t0.Add(-30*time.Minute)), failedMigration("f2", "stuck", t0.Add(-20*time.Minute)),
		failedMigration("f3", "stuck", t0.Add(-10*time.Minute)),
	}
	h := newHarness(t, deployedKubeVirt(v1.KubeVirtSpec{WorkloadUpdates: ours}), objs...)
	h.reconcile()
	first := h.events()
	count := func(evs []string, reason string) int {
		n := 0
		for _, e := range evs {
			if strings.Contains(e, reason) {
				n++
			}
		}
		return n
	}
	// The failures are older than this process: announced by the process
	// that saw them happen, not again (FailedMigration).
	if count(first, core.ReasonNeedsAttention) != 1 || count(first, core.ReasonInvalidChoice) != 1 || count(first, core.ReasonFailedMigration) != 0 {
		t.Fatalf("first pass events: %v", first)
	}
	if len(h.migrations()) != 3 {
		t.Fatalf("a VMI needing attention and one with an invalid choice got migrations: %d", len(h.migrations())-3)
	}
	h.reconcile()
	if again := h.events(); len(again) != 0 {
		t.Fatalf("the same state announced again: %v", again)
	}
	w := h.status().Status.WorkloadUpdates
	if w.NeedsAttention != 1 || fmt.Sprint(w.NeedsAttentionVMIs) != "[vms/stuck]" || w.Choices == nil || w.Choices.Invalid != 1 {
		t.Fatalf("status.workloadUpdates %+v", w)
	}
}

func TestWatchPredicates(t *testing.T) {
	r := &Reconciler{}
	c := core.CompactVMI
	old := outdatedVMI("vm", "a", nil)
	probed := old.DeepCopy()
	probed.Status.Conditions[0].LastProbeTime = metav1.NewTime(t0)
	probed.ResourceVersion = "2"
	moved := old.DeepCopy()
	moved.Status.NodeName = "b"
	labelled := old.DeepCopy()
	labelled.Labels = map[string]string{core.ChoiceKey: "None"}
	other := old.DeepCopy()
	other.Labels = map[string]string{"app": "db"}
	cases := []struct {
		name string
		new  *v1.VirtualMachineInstance
		want bool
	}{
		{"a probe time alone", probed, false},
		{"a label the updater does not read", other, false},
		{"a new node", moved, true},
		{"a choice label", labelled, true},
	}
	for _, tc := range cases {
		if got := r.vmiPasses(c(old), c(tc.new)); got != tc.want {
			t.Errorf("%s: passes %v, want %v", tc.name, got, tc.want)
		}
	}
	kv := deployedKubeVirt(v1.KubeVirtSpec{})
	own := kv.DeepCopy()
	own.ResourceVersion = "7"
	own.Status.WorkloadUpdates = &v1.WorkloadUpdatesStatus{Outdated: 3}
	upgraded := kv.DeepCopy()
	upgraded.Status.ObservedDeploymentID = "new"
	if notOwnStatusWrite.Update(event.UpdateEvent{ObjectOld: kv, ObjectNew: own}) {
		t.Error("the updater's own status write passed")
	}
	progressed := kv.DeepCopy()
	progressed.Status.HandlerRollout = &v1.HandlerRolloutStatus{Phase: "FastStep", Message: "120 of 1000 pods updated"}
	if notOwnStatusWrite.Update(event.UpdateEvent{ObjectOld: kv, ObjectNew: progressed}) {
		t.Error("the virt-handler rollout's progress passed")
	}
	if !notOwnStatusWrite.Update(event.UpdateEvent{ObjectOld: kv, ObjectNew: upgraded}) {
		t.Error("a change of the observed deployment was dropped")
	}
	cm := core.CompactMigration
	scheduling := &v1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "vms"},
		Spec: v1.VirtualMachineInstanceMigrationSpec{VMIName: "vm"}, Status: v1.VirtualMachineInstanceMigrationStatus{Phase: v1.MigrationScheduling}}
	running := scheduling.DeepCopy()
	running.Status.Phase = v1.MigrationRunning
	succeeded := running.DeepCopy()
	succeeded.Status.Phase = v1.MigrationSucceeded
	if r.migrationPasses(cm(scheduling), cm(running)) {
		t.Error("a migration's step between two running phases passed")
	}
	if !r.migrationPasses(cm(running), cm(succeeded)) || !r.migrationPasses(nil, cm(scheduling)) {
		t.Error("a migration finishing or created was dropped")
	}
	r.gateClosed.Store(true)
	if r.vmiPasses(c(old), c(moved)) || r.openGatePredicate().Create(event.CreateEvent{Object: old}) ||
		r.migrationPasses(nil, cm(scheduling)) || r.migrationPasses(cm(running), cm(succeeded)) {
		t.Error("a VMI update or a migration event passed while the gate is closed")
	}
	// The count the status reports while the updater waits follows VMIs that
	// come and go.
	if !r.vmiPasses(nil, c(old)) || !r.vmiPasses(c(old), nil) {
		t.Error("a VMI created or deleted was dropped while the gate is closed")
	}
}

// On a one-node cluster no migration is created: the VMIs are reported not
// movable at once; a second node that becomes usable lets them go.
func TestReconcileCreatesNoMigrationWithoutATarget(t *testing.T) {
	only := readyNode("a")
	h := newHarness(t, deployedKubeVirt(v1.KubeVirtSpec{WorkloadUpdates: ours}),
		only, outdatedVMI("a1", "a", nil), outdatedVMI("a2", "a", nil))
	h.reconcile()
	if n := len(h.migrations()); n != 0 {
		t.Fatalf("%d migrations on one node, want none", n)
	}
	w := h.status().Status.WorkloadUpdates
	if w == nil || w.NotMovable != 2 || len(w.NotMovableVMIs) != 2 || w.NotMovableVMIs[0] != "vms/a1: no other schedulable node" {
		t.Fatalf("status.workloadUpdates %+v, want both VMIs not movable, named with the reason", w)
	}
	if ev := h.events(); len(ev) != 2 || !strings.Contains(ev[0], core.ReasonNotMovable) || !strings.Contains(ev[0], "no other schedulable node") {
		t.Fatalf("events %q, want one %s per VMI naming why", ev, core.ReasonNotMovable)
	}
	h.reconcile()
	if ev := h.events(); len(ev) != 0 {
		t.Fatalf("a second pass announced %q again", ev)
	}
	second := readyNode("b")
	second.Spec.Unschedulable = true
	if err := h.c.Create(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	if n := len(h.migrations()); n != 0 {
		t.Fatalf("%d migrations with the second node cordoned, want none", n)
	}
	second.Spec.Unschedulable = false
	if err := h.c.Update(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	if n := len(h.migrations()); n != 1 {
		t.Fatalf("%d migrations once node b is uncordoned, want 1 (one per source node)", n)
	}
	if w := h.status().Status.WorkloadUpdates; w.NotMovable != 0 || w.NotMovableVMIs != nil {
		t.Errorf("status still reports not movable VMIs: %+v", w)
	}
}

func TestTargetChangedPredicate(t *testing.T) {
	old := readyNode("a")
	old.ResourceVersion = "1"
	heartbeat := old.DeepCopy()
	heartbeat.ResourceVersion = "2"
	heartbeat.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(t0)
	heartbeat.Status.Images = []corev1.ContainerImage{{Names: []string{"x"}}}
	cordoned := old.DeepCopy()
	cordoned.Spec.Unschedulable = true
	notReady := old.DeepCopy()
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	labelled := old.DeepCopy()
	labelled.Labels = map[string]string{metadata.SchedulableLabel: "false"}
	tainted := old.DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
	for name, c := range map[string]struct {
		new  *corev1.Node
		want bool
	}{
		"a heartbeat": {heartbeat, false}, "cordoned": {cordoned, true}, "not Ready": {notReady, true},
		"labelled": {labelled, true}, "tainted": {tainted, true},
	} {
		if got := targetChanged.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: c.new}); got != c.want {
			t.Errorf("%s: passes %v, want %v", name, got, c.want)
		}
	}
}

// Migrations this operator did not start move only the gauges: they are
// written at most every core.CountsInterval, the last of them when it is due.
func TestReconcileHoldsGaugesOfForeignMigrations(t *testing.T) {
	upToDate := outdatedVMI("vm", "a", nil)
	upToDate.Status.LauncherContainerImageVersion = "quay.io/kubevirt/virt-launcher:v2"
	foreign := func(name string) *v1.VirtualMachineInstanceMigration {
		return &v1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "vms"},
			Spec: v1.VirtualMachineInstanceMigrationSpec{VMIName: "vm"}, Status: v1.VirtualMachineInstanceMigrationStatus{Phase: v1.MigrationRunning}}
	}
	h := newHarness(t, deployedKubeVirt(v1.KubeVirtSpec{WorkloadUpdates: ours}), upToDate, foreign("first"))
	clock := h.r.Clock.(*clocktesting.FakePassiveClock)
	inFlight := func() int { return h.status().Status.WorkloadUpdates.MigrationsInFlight }

	h.reconcile() // the first write of this process is never held
	if got := inFlight(); got != 1 {
		t.Fatalf("in flight after the first reconcile: %d, want 1", got)
	}
	if err := h.c.Create(context.Background(), foreign("second")); err != nil {
		t.Fatal(err)
	}
	clock.SetTime(t0.Add(2 * time.Second))
	res := h.reconcile()
	if got := inFlight(); got != 1 {
		t.Errorf("a gauge was written %v after the last write: in flight %d", 2*time.Second, got)
	}
	if want := core.CountsInterval - 2*time.Second; res.RequeueAfter != want {
		t.Errorf("requeue after %v, want %v (when the held gauges are due)", res.RequeueAfter, want)
	}
	clock.SetTime(t0.Add(core.CountsInterval))
	h.reconcile()
	if got := inFlight(); got != 2 {
		t.Errorf("the held gauge was not written when due: in flight %d, want 2", got)
	}
	kv := h.status()
	kv.Spec.WorkloadUpdates = &v1.WorkloadUpdatePolicy{Methods: ours.Methods, Paused: true}
	if err := h.c.Update(context.Background(), kv); err != nil {
		t.Fatal(err)
	}
	h.reconcile() // at the same instant: a pause is never held
	if !h.status().Status.WorkloadUpdates.Paused {
		t.Error("the pause was held back with the gauges")
	}
}
