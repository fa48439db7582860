package kubevirt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apitypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/rollout"
	"github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// canaryEnv is a three-node cluster on v1.8.4 being upgraded to v1.9.0 with
// the migration probe on, VMI default/probe-vm on node-2, driven pass by pass
// through the handler step on a fake client.
type canaryEnv struct {
	t       *testing.T
	c       client.Client
	r       *Reconciler
	kv      *v1.KubeVirt
	cfg     *deployid.Config
	live    *appsv1.DaemonSet
	desired *appsv1.DaemonSet
	newT    metadata.Target
	sc      *scope
	out     handlerOutcome // the last pass's
	now     time.Time
}

func newCanaryEnv(t *testing.T, funcs *interceptor.Funcs) *canaryEnv {
	oldT := metadata.Target{Version: "v1.8.4", Registry: "quay.io/kubevirt", ID: "old"}
	e := &canaryEnv{t: t, newT: metadata.Target{Version: "v1.9.0", Registry: "quay.io/kubevirt", ID: "new"}, now: t0.Add(time.Hour)}
	e.live = handlerDaemonSet(oldT)
	e.live.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberReady: 3}
	objs := []client.Object{e.live}
	for i := range 3 {
		node := fmt.Sprintf("node-%d", i)
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{corev1.LabelHostname: node}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}})
		objs = append(objs, handlerPod(node, oldT, e.live))
	}
	objs = append(objs, &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "probe-vm", UID: "uid-probe-vm",
		Labels: map[string]string{"app": "probe"}},
		Status: v1.VirtualMachineInstanceStatus{Phase: v1.VMIRunning, NodeName: "node-2",
			Conditions: []v1.VirtualMachineInstanceCondition{{Type: v1.VMIConditionLiveMigratable, Status: corev1.ConditionTrue}}}})
	b := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...)
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	e.c = b.Build()
	e.r = &Reconciler{Client: e.c, Namespace: "kubevirt", Recorder: events.NewFakeRecorder(100), Clock: clocktesting.NewFakePassiveClock(e.now)}
	e.kv = &v1.KubeVirt{
		Spec: v1.KubeVirtSpec{HandlerRollout: &v1.HandlerRolloutPolicy{DataPlaneChecks: &v1.HandlerDataPlaneChecks{CanaryPod: true,
			MigrationProbe: &v1.HandlerMigrationProbe{VMISelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}}}}}},
		Status: v1.KubeVirtStatus{TargetKubeVirtVersion: e.newT.Version, TargetKubeVirtRegistry: e.newT.Registry,
			TargetDeploymentID: e.newT.ID, ObservedKubeVirtVersion: oldT.Version, ObservedDeploymentID: oldT.ID}}
	e.cfg = &deployid.Config{KubeVirtVersion: e.newT.Version, Registry: e.newT.Registry, ID: e.newT.ID}
	e.desired = handlerDaemonSet(e.newT)
	return e
}

func handlerPod(node string, tgt metadata.Target, ds *appsv1.DaemonSet) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-handler-" + tgt.ID + "-" + node, Labels: ds.Spec.Selector.MatchLabels,
			Annotations: handlerMarks(tgt), CreationTimestamp: metav1.NewTime(t0.Add(time.Hour))},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "virt-handler"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "virt-handler", Ready: true}}},
	}
}

// pass runs the handler step once at now and writes its status, as the
// reconcile's end does; it returns the step's error.
func (e *canaryEnv) pass() error {
	e.t.Helper()
	ctx := context.Background()
	ds := &appsv1.DaemonSet{}
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(e.live), ds); err != nil {
		e.t.Fatal(err)
	}
	ds.Status.ObservedGeneration = ds.Generation
	e.sc = &scope{kv: e.kv, cfg: e.cfg, now: e.now}
	step := apply.Step{Name: apply.StepVirtHandler, Objects: []client.Object{e.desired}}
	out, err := e.r.syncHandlerStep(ctx, e.sc, step, map[apply.ObjectRef]client.Object{apply.RefOf(ds): ds})
	e.out = out
	if err == nil {
		e.kv.Status = nextStatus(e.kv.Status, e.sc, "")
	}
	return err
}

// toVerifying runs the rollout to its checks: Started, Canary (node-0's old
// pod deleted; the DaemonSet's new one Ready since long before), Verifying.
func (e *canaryEnv) toVerifying() {
	e.t.Helper()
	for range 2 {
		if err := e.pass(); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := e.c.Create(context.Background(), handlerPod("node-0", e.newT, e.live)); err != nil {
		e.t.Fatal(err)
	}
	if err := e.pass(); err != nil {
		e.t.Fatal(err)
	}
	if h := e.kv.Status.HandlerRollout; h.Phase != string(rollout.PhaseVerifying) {
		e.t.Fatalf("after the bake: %+v", h)
	}
}

func (e *canaryEnv) events(reason string) []string {
	var out []string
	for _, ev := range e.sc.Events {
		if ev.Reason == reason {
			out = append(out, ev.Message)
		}
	}
	return out
}

func (e *canaryEnv) migration(name string) *v1.VirtualMachineInstanceMigration {
	m := &v1.VirtualMachineInstanceMigration{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, m); err != nil {
		return nil
	}
	return m
}

// The probe's I/O: after the bake the handler step creates the probe's
// migration onto the canary node (labelled, pinned by hostname, an Event),
// says so in status, and creates no second one on the next pass; when that
// migration fails the rollout fails and rolls back, status, Degraded and a
// Warning name the check, the VMI and the reason, and the gauges say Failed.
func TestCanaryProbeCreatesItsMigrationAndFailsWithIt(t *testing.T) {
	e := newCanaryEnv(t, nil)
	e.toVerifying()
	st := e.kv.Status.HandlerRollout
	key := rollout.ProbeKey(e.newT.ID, st.StartedAt.Time)
	name := rollout.ProbeMigrationName(key, 0)
	m := e.migration(name)
	if m == nil || m.Labels[workloadupdate.HandlerProbeLabel] != key || m.Spec.VMIName != "probe-vm" ||
		m.Spec.AddedNodeSelector[corev1.LabelHostname] != "node-0" || m.Annotations[rollout.ProbeDirectionAnnotation] != "Onto" {
		t.Fatalf("probe migration %s: %+v", name, m)
	}
	if got := e.events(ReasonProbeMigrationCreated); len(got) != 1 || !strings.Contains(got[0], "default/"+name) {
		t.Fatalf("creation Events %v", got)
	}
	if p := st.MigrationProbe; p == nil || p.VMI != "default/probe-vm" || len(p.Moves) != 3 || p.Moves[0].Migration != name ||
		len(st.DataPlaneChecks) != 2 || st.DataPlaneChecks[1].Deadline == nil {
		t.Fatalf("status %+v", st)
	}

	// The next pass waits for it: no second create, no Event.
	if err := e.pass(); err != nil {
		t.Fatal(err)
	}
	if got := e.events(ReasonProbeMigrationCreated); len(got) != 0 {
		t.Fatalf("a second creation: %v", got)
	}

	// virt-handler on node-0 cannot take it.
	m.Status.Phase = v1.MigrationFailed
	if err := e.c.Update(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	vmi := &v1.VirtualMachineInstance{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "probe-vm"}, vmi); err != nil {
		t.Fatal(err)
	}
	vmi.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{MigrationUID: m.UID, SourceNode: "node-2", TargetNode: "node-0",
		Completed: true, Failed: true, FailureReason: "virt-handler on node-0 cannot take migrations"}
	if err := e.c.Update(context.Background(), vmi); err != nil {
		t.Fatal(err)
	}
	if err := e.pass(); err != nil {
		t.Fatal(err)
	}
	st = e.kv.Status.HandlerRollout
	want := "data-plane check MigrationProbe failed on VMI default/probe-vm: live migration " + name +
		" of VMI default/probe-vm onto node node-0 failed: virt-handler on node-0 cannot take migrations"
	if st.Phase != string(rollout.PhaseFailed) || !strings.Contains(st.Message, want) || st.DataPlaneChecks[1].State != "Failed" ||
		st.DataPlaneChecks[1].VMI != "default/probe-vm" || st.DataPlaneChecks[0].State != "Stopped" {
		t.Fatalf("status %+v", st)
	}
	if got := e.events(rollout.ReasonDataPlaneCheckFailed); len(got) != 1 || !strings.Contains(got[0], want) {
		t.Fatalf("Warnings %v, want one saying %q", got, want)
	}
	if e.out.Reason != ReasonHandlerRolloutFailed || !strings.Contains(e.out.Message, want) {
		t.Fatalf("the step's problem (Degraded) %q: %q", e.out.Reason, e.out.Message)
	}
	publishCheckMetrics(st)
	if got := testutil.ToFloat64(handlerCheck.WithLabelValues("MigrationProbe", "Failed")); got != 1 {
		t.Fatalf("%s{MigrationProbe,Failed} = %v", HandlerCheckMetric, got)
	}
	if n, err := testutil.GatherAndCount(metrics.Registry, HandlerCheckMetric, HandlerCheckDurationMetric); err != nil || n < 2*7 {
		t.Fatalf("%d series of the check metrics (%v)", n, err)
	}
}

// A probe that times out aborts its migration; a delete that fails is an
// error of the pass, whose status is then not written, and the next pass
// aborts it again from the Failed state it then writes.
func TestCanaryProbeAbortsItsMigrationOnTimeout(t *testing.T) {
	deletes, failDelete := 0, true
	e := newCanaryEnv(t, &interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		if _, ok := obj.(*v1.VirtualMachineInstanceMigration); ok {
			deletes++
			if failDelete {
				return errors.New("the API server is unavailable")
			}
		}
		return c.Delete(ctx, obj, opts...)
	}})
	e.toVerifying()
	name := rollout.ProbeMigrationName(rollout.ProbeKey(e.newT.ID, e.kv.Status.HandlerRollout.StartedAt.Time), 0)
	e.now = e.now.Add(rollout.DefaultProbeTimeout)
	if err := e.pass(); err == nil || !strings.Contains(err.Error(), "aborting the migration probe's migration default/"+name) {
		t.Fatalf("pass error %v", err)
	}
	if e.kv.Status.HandlerRollout.Phase != string(rollout.PhaseVerifying) || e.migration(name) == nil {
		t.Fatal("a failed abort must leave the status as it was, and the migration")
	}
	failDelete = false
	if err := e.pass(); err != nil {
		t.Fatal(err)
	}
	st := e.kv.Status.HandlerRollout
	if st.Phase != string(rollout.PhaseFailed) || !strings.Contains(st.Message, "timed out after 5m0s") || e.migration(name) != nil {
		t.Fatalf("after the timeout: %+v, migration left %v", st, e.migration(name) != nil)
	}
	if got := e.events(ReasonProbeMigrationAborted); len(got) != 1 {
		t.Fatalf("abort Events %v", got)
	}
	before := deletes
	if err := e.pass(); err != nil { // Failed holds: nothing more to abort
		t.Fatal(err)
	}
	if deletes != before {
		t.Fatalf("%d more deletes while the failed rollout holds", deletes-before)
	}
}

// A probe migration created by an earlier pass whose status write was lost
// meets AlreadyExists: the pass goes on, with no second Event.
func TestCanaryProbeCreateIsIdempotent(t *testing.T) {
	e := newCanaryEnv(t, nil)
	m := &v1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: apitypes.UID("u")}}
	if err := e.c.Create(context.Background(), m.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	e.sc = &scope{kv: e.kv, now: e.now}
	if err := e.r.actOnChecks(context.Background(), e.sc, rollout.Decision{CreateMigration: m}); err != nil {
		t.Fatal(err)
	}
	if got := e.events(ReasonProbeMigrationCreated); len(got) != 0 {
		t.Fatalf("Events %v for a migration that already existed", got)
	}
}
