package kubevirt

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/diagnose"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/rollout"
)

func handlerMarks(t metadata.Target) map[string]string {
	return map[string]string{
		metadata.InstallStrategyVersionAnnotation:    t.Version,
		metadata.InstallStrategyRegistryAnnotation:   t.Registry,
		metadata.InstallStrategyIdentifierAnnotation: t.ID,
	}
}

func handlerDaemonSet(t metadata.Target) *appsv1.DaemonSet {
	sel := map[string]string{"kubevirt.io": "virt-handler"}
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-handler", Annotations: handlerMarks(t)},
		Spec: appsv1.DaemonSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: sel},
			UpdateStrategy: *rollout.Default(),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel, Annotations: handlerMarks(t)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "virt-handler", Image: "quay.io/kubevirt/virt-handler:" + t.Version}}},
			},
		},
	}
}

// The handler step's shell: an upgrade switches the live DaemonSet to the
// target under OnDelete (Started), then deletes the canary's old pod, on a
// Ready node, and records each phase in status.
func TestSyncHandlerStartsTheCanary(t *testing.T) {
	scheme := testScheme(t)
	oldT := metadata.Target{Version: "v1.8.4", Registry: "quay.io/kubevirt", ID: "old"}
	newT := metadata.Target{Version: "v1.9.0", Registry: "quay.io/kubevirt", ID: "new"}
	live := handlerDaemonSet(oldT)
	live.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberReady: 3}
	objs := []client.Object{live}
	for i := range 3 {
		node := fmt.Sprintf("node-%d", i)
		ready := corev1.ConditionTrue
		if i == 0 {
			ready = corev1.ConditionFalse // first in name order, but not a canary
		}
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}})
		objs = append(objs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-handler-" + node, Labels: live.Spec.Selector.MatchLabels,
				Annotations: handlerMarks(oldT)},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "virt-handler"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "virt-handler", Ready: true}}},
		})
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	r := &Reconciler{Client: c, Namespace: "kubevirt", Recorder: events.NewFakeRecorder(100), Clock: clocktesting.NewFakePassiveClock(t0)}
	kv := &v1.KubeVirt{Status: v1.KubeVirtStatus{TargetKubeVirtVersion: newT.Version, TargetKubeVirtRegistry: newT.Registry,
		TargetDeploymentID: newT.ID, ObservedKubeVirtVersion: oldT.Version, ObservedDeploymentID: oldT.ID}}
	cfg := &deployid.Config{KubeVirtVersion: newT.Version, Registry: newT.Registry, ID: newT.ID}
	desired := handlerDaemonSet(newT)
	ctx := context.Background()
	var lastRequeue time.Duration // what the pass asked for: a rollout that waits must look again by itself
	pass := func() (handlerOutcome, *appsv1.DaemonSet) {
		t.Helper()
		ds := &appsv1.DaemonSet{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(live), ds); err != nil {
			t.Fatal(err)
		}
		ds.Status.ObservedGeneration = ds.Generation // the DaemonSet controller has seen it
		sc := &scope{kv: kv, cfg: cfg, now: t0}
		step := apply.Step{Name: apply.StepVirtHandler, Objects: []client.Object{desired}}
		out, err := r.syncHandlerStep(ctx, sc, step, map[apply.ObjectRef]client.Object{apply.RefOf(ds): ds})
		if err != nil {
			t.Fatal(err)
		}
		lastRequeue = sc.Requeue
		kv.Status = nextStatus(kv.Status, sc, "") // the pass's status write
		if err := c.Get(ctx, client.ObjectKeyFromObject(live), ds); err != nil {
			t.Fatal(err)
		}
		return out, ds
	}

	out, ds := pass()
	if out.Done || kv.Status.HandlerRollout == nil || kv.Status.HandlerRollout.Phase != string(rollout.PhaseStarted) ||
		ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType || !metadata.DaemonSetIsUpToDate(ds, newT) {
		t.Fatalf("first pass: done %v, status %+v, strategy %s, up to date %v", out.Done, kv.Status.HandlerRollout,
			rollout.StrategyString(ds.Spec.UpdateStrategy), metadata.DaemonSetIsUpToDate(ds, newT))
	}
	_, _ = pass()
	st := kv.Status.HandlerRollout
	if st.Phase != string(rollout.PhaseCanary) || st.CanaryNode != "node-1" {
		t.Fatalf("second pass: %+v, want the canary on node-1 (node-0 is not Ready)", st)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "kubevirt", Name: "virt-handler-node-1"}, &corev1.Pod{}); err == nil {
		t.Fatal("the canary's old pod was not deleted")
	}
	if lastRequeue <= 0 {
		t.Fatal("the canary's pass asks for no look again: a bake or deadline would wait for an unrelated event")
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "kubevirt", Name: "virt-handler-node-0"}, &corev1.Pod{}); err != nil {
		t.Fatalf("a pod on the NotReady node was touched: %v", err)
	}
}

// The write that starts a rollout carries over the running template's TLS
// flags as the API server has them, not as a lagging cache does: an edit made
// just before the spec changed (the cache's copy lacks the flag) is kept.
func TestSyncHandlerCarriesOverWhatTheAPIServerRuns(t *testing.T) {
	const flag = "--tls-min-version=1.2"
	oldT := metadata.Target{Version: "v1.8.4", Registry: "quay.io/kubevirt", ID: "old"}
	newT := metadata.Target{Version: "v1.9.0", Registry: "quay.io/kubevirt", ID: "new"}
	running := handlerDaemonSet(oldT)
	running.Spec.Template.Spec.Containers[0].Args = []string{"--port", "8443", flag}
	running.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 1, CurrentNumberScheduled: 1, UpdatedNumberScheduled: 1, NumberReady: 1}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(running, node).Build()
	r := &Reconciler{Client: c, APIReader: c, Namespace: "kubevirt", Recorder: events.NewFakeRecorder(100), Clock: clocktesting.NewFakePassiveClock(t0)}
	cached := &appsv1.DaemonSet{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(running), cached); err != nil {
		t.Fatal(err)
	}
	cached.Spec.Template.Spec.Containers[0].Args = []string{"--port", "8443"} // the cache before the edit
	kv := &v1.KubeVirt{Status: v1.KubeVirtStatus{TargetKubeVirtVersion: newT.Version, TargetKubeVirtRegistry: newT.Registry,
		TargetDeploymentID: newT.ID, ObservedKubeVirtVersion: oldT.Version, ObservedDeploymentID: oldT.ID}}
	desired := handlerDaemonSet(newT)
	desired.Spec.Template.Spec.Containers[0].Args = []string{"--port", "8443"}
	sc := &scope{kv: kv, cfg: &deployid.Config{KubeVirtVersion: newT.Version, Registry: newT.Registry, ID: newT.ID}, now: t0}
	step := apply.Step{Name: apply.StepVirtHandler, Objects: []client.Object{desired}}
	if _, err := r.syncHandlerStep(context.Background(), sc, step, map[apply.ObjectRef]client.Object{apply.RefOf(cached): cached}); err != nil {
		t.Fatal(err)
	}
	written := &appsv1.DaemonSet{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(running), written); err != nil {
		t.Fatal(err)
	}
	args := written.Spec.Template.Spec.Containers[0].Args
	if !metadata.DaemonSetIsUpToDate(written, newT) || !slices.Contains(args, flag) ||
		written.Annotations[rollout.CarriedOverAnnotation] != rollout.CarriedTLSArgs {
		t.Fatalf("written: target %v, args %v, annotations %v; want the target with %s carried over",
			metadata.DaemonSetIsUpToDate(written, newT), args, written.Annotations, flag)
	}
}

// A DaemonSet short of pods names its latest recent FailedCreate, and asks the
// API server for FailedCreate Events only: during a rollout its controller
// writes an Event for every pod it creates or deletes.
func TestDaemonSetRefusedListsOnlyRefusals(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-handler", UID: "ds-uid"},
		Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 2}}
	event := func(name, reason, message string, age time.Duration) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: name},
			InvolvedObject: corev1.ObjectReference{Kind: "DaemonSet", Name: ds.Name, UID: ds.UID},
			Type:           corev1.EventTypeWarning, Reason: reason, Message: message, LastTimestamp: metav1.NewTime(now.Add(-age)),
			Source: corev1.EventSource{Component: diagnose.DaemonSetController}}
	}
	var selectors []string
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).
		WithObjects(event("created", "SuccessfulCreate", "Created pod: virt-handler-x", time.Minute),
			event("refused", "FailedCreate", "pods is forbidden: exceeded quota", 2*time.Minute),
			event("stale", "FailedCreate", "an old refusal", time.Hour)).
		WithIndex(&corev1.Event{}, "involvedObject.uid", func(o client.Object) []string {
			return []string{string(o.(*corev1.Event).InvolvedObject.UID)}
		}).
		WithIndex(&corev1.Event{}, "reason", func(o client.Object) []string { return []string{o.(*corev1.Event).Reason} }).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			o := &client.ListOptions{}
			o.ApplyOptions(opts)
			if o.FieldSelector != nil {
				selectors = append(selectors, o.FieldSelector.String())
			}
			return c.List(ctx, list, opts...)
		}}).Build()
	r := &Reconciler{Client: c, APIReader: c}
	got, err := r.daemonSetRefused(context.Background(), ds, now)
	if err != nil || got != "pods is forbidden: exceeded quota" {
		t.Errorf("refused = %q, %v", got, err)
	}
	if len(selectors) != 1 || !strings.Contains(selectors[0], "reason=FailedCreate") {
		t.Errorf("field selectors %q: want the FailedCreate ones only", selectors)
	}
	full := ds.DeepCopy()
	full.Status.CurrentNumberScheduled = 3
	if got, err := r.daemonSetRefused(context.Background(), full, now); got != "" || err != nil || len(selectors) != 1 {
		t.Errorf("a DaemonSet with every pod: %q, %v, %d lists", got, err, len(selectors))
	}
}

// virt-handler's Events are read for a refusal only once the rollout has
// stalled: a fast step that updates pods every second never lists them.
func TestRefusalsLookedForOnlyWhenStalled(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name     string
		progress time.Time
		want     bool
	}{
		{"pods updated a second ago", now.Add(-time.Second), false},
		{"just short of the wait", now.Add(-refusalLookAfter + time.Millisecond), false},
		{"no progress for the wait", now.Add(-refusalLookAfter), true},
		{"no progress recorded", time.Time{}, true},
	} {
		if got := stalled(c.progress, now); got != c.want {
			t.Errorf("%s: stalled %v, want %v", c.name, got, c.want)
		}
	}
}
