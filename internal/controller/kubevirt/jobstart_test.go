package kubevirt

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
)

const noSuchAccount = `Error creating: pods "virt-operator-install-strategy-abc-" is forbidden: error looking up service account kubevirt/virt-operator: serviceaccount "virt-operator" not found`

func jobPod(name string, mutate func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: name,
		Labels: map[string]string{batchv1.JobNameLabel: "virt-operator-install-strategy-abc"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	mutate(&p)
	return p
}

func jobEvent(name string, uid types.UID, reason, message string, at time.Time) corev1.Event {
	return corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: "Job", Name: "virt-operator-install-strategy-abc", UID: uid},
		Type:           corev1.EventTypeWarning, Reason: reason, Message: message, LastTimestamp: metav1.NewTime(at)}
}

func TestJobStartProblem(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-operator-install-strategy-abc", UID: "job-uid"}}
	unschedulable := jobPod("p1", func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}}
	})
	pullError := jobPod("p2", func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "install-strategy-upload",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "quay.io/kubevirt/virt-operator:v9"`}}}}
	})
	starting := jobPod("p3", func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "install-strategy-upload",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
	})
	failed := jobPod("p4", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		pods   []corev1.Pod
		events []corev1.Event
		want   string
	}{
		{"nothing yet", nil, nil, ""},
		{"a pod starting", []corev1.Pod{starting}, nil, ""},
		{"unschedulable", []corev1.Pod{unschedulable}, nil, "pod p1 cannot be scheduled: 0/3 nodes are available"},
		{"the image cannot be pulled", []corev1.Pod{pullError}, nil, `pod p2 cannot start container install-strategy-upload: ImagePullBackOff: Back-off pulling image "quay.io/kubevirt/virt-operator:v9"`},
		{"no pod, the Job controller refused: the latest refusal", []corev1.Pod{failed}, []corev1.Event{
			jobEvent("e2", "job-uid", "FailedCreate", noSuchAccount, t0.Add(time.Second)),
			jobEvent("e1", "job-uid", "FailedCreate", "an older refusal", t0),
		}, "Job virt-operator-install-strategy-abc cannot create its pod: " + noSuchAccount},
		{"another Job's refusal", nil, []corev1.Event{jobEvent("e1", "other-uid", "FailedCreate", noSuchAccount, t0)}, ""},
		{"a live pod outweighs an old refusal", []corev1.Pod{starting}, []corev1.Event{jobEvent("e1", "job-uid", "FailedCreate", noSuchAccount, t0)}, ""},
		{"not a refusal", nil, []corev1.Event{jobEvent("e1", "job-uid", "SuccessfulCreate", "Created pod", t0)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := JobStartProblem(job, tc.pods, tc.events)
			if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The controller shell: a strategy Job whose pod the API refuses sets Degraded
// naming the refusal and looks again soon, instead of waiting in silence.
func TestReconcileReportsAStrategyJobThatCannotStart(t *testing.T) {
	scheme := testScheme(t)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	env := deployid.MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0"}
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt"}}
	cfg, err := deployid.FromKubeVirt(kv, env)
	if err != nil {
		t.Fatal(err)
	}
	job := StrategyJob(cfg, "virt-operator", 0)
	job.UID = "job-uid"
	refusal := jobEvent("e1", job.UID, "FailedCreate", noSuchAccount, now)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(kv, job, &refusal).
		WithIndex(&corev1.Event{}, "involvedObject.uid", func(o client.Object) []string {
			return []string{string(o.(*corev1.Event).InvolvedObject.UID)}
		}).
		WithStatusSubresource(&v1.KubeVirt{}).Build()
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Client: c, APIReader: c, Namespace: "kubevirt", Env: env, ServiceAccount: "virt-operator",
		Clock: clocktesting.NewFakePassiveClock(now), Recorder: rec}
	key := types.NamespacedName{Namespace: "kubevirt", Name: "kubevirt"}
	res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != jobCheckInterval {
		t.Fatalf("requeue after %v, want %v", res.RequeueAfter, jobCheckInterval)
	}
	got := &v1.KubeVirt{}
	if err := c.Get(context.Background(), key, got); err != nil {
		t.Fatal(err)
	}
	d := findCondition(got.Status.Conditions, v1.KubeVirtConditionDegraded)
	if d == nil || d.Status != corev1.ConditionTrue || d.Reason != ReasonStrategyJobBlocked ||
		!strings.Contains(d.Message, `serviceaccount "virt-operator" not found`) {
		t.Fatalf("Degraded = %+v, want True, %s, naming the missing ServiceAccount", d, ReasonStrategyJobBlocked)
	}
	close(rec.Events)
	var seen []string
	for ev := range rec.Events {
		if strings.HasPrefix(ev, "Warning "+ReasonStrategyJobBlocked) {
			return
		}
		seen = append(seen, ev)
	}
	t.Fatalf("no Warning %s among %q", ReasonStrategyJobBlocked, seen)
}

// Unhappy paths of the strategy Job: a Job the cache does not show yet is not
// made twice (its name is taken), a Job deleted under the operator is made
// again, and a refused create is an error to retry, with nothing half-written.
func TestStrategyJobDeletedOrRefused(t *testing.T) {
	scheme := testScheme(t)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := clocktesting.NewFakeClock(now)
	env := deployid.MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0"}
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt"}}
	refuse, hideJobs := false, false
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(kv).WithStatusSubresource(&v1.KubeVirt{}).
		WithIndex(&corev1.Event{}, "involvedObject.uid", func(o client.Object) []string {
			return []string{string(o.(*corev1.Event).InvolvedObject.UID)}
		}).
		WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, isJob := obj.(*batchv1.Job); isJob && refuse {
				return apierrors.NewForbidden(batchv1.Resource("jobs"), obj.GetName(), errors.New("quota exceeded"))
			}
			return c.Create(ctx, obj, opts...)
		}, List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, isJobs := list.(*batchv1.JobList); isJobs && hideJobs {
				return nil // a cache that has not caught up
			}
			return c.List(ctx, list, opts...)
		}}).Build()
	r := &Reconciler{Client: c, APIReader: c, Namespace: "kubevirt", Env: env, ServiceAccount: "virt-operator",
		Clock: clock, Recorder: events.NewFakeRecorder(100)}
	key := types.NamespacedName{Namespace: "kubevirt", Name: "kubevirt"}
	jobs := func() []batchv1.Job {
		list := &batchv1.JobList{}
		if err := c.List(context.Background(), list, client.InNamespace("kubevirt")); err != nil {
			t.Fatal(err)
		}
		return list.Items
	}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	first := jobs()
	if len(first) != 1 {
		t.Fatalf("%d Jobs after the first pass, want 1", len(first))
	}
	hideJobs = true
	res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
	hideJobs = false
	if err != nil || res.RequeueAfter == 0 || len(jobs()) != 1 {
		t.Fatalf("a Job the cache does not show yet: %v, requeue %v, %d Jobs; want no error, a look again, one Job", err, res.RequeueAfter, len(jobs()))
	}
	if err := c.Delete(context.Background(), &first[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if again := jobs(); len(again) != 1 {
		t.Fatalf("after the Job was deleted: %d Jobs, want it made again", len(again))
	}

	refuse = true
	for _, j := range jobs() {
		if err := c.Delete(context.Background(), &j); err != nil {
			t.Fatal(err)
		}
	}
	_, err = r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
	if err == nil || !strings.Contains(err.Error(), "creating the install-strategy Job") || !strings.Contains(err.Error(), "quota exceeded") {
		t.Fatalf("a refused Job create: %v, want an error naming it", err)
	}
	if len(jobs()) != 0 {
		t.Fatal("a Job exists after its create was refused")
	}
	got := &v1.KubeVirt{}
	if err := c.Get(context.Background(), key, got); err != nil {
		t.Fatal(err)
	}
	if d := findCondition(got.Status.Conditions, v1.KubeVirtConditionDegraded); d == nil || d.Status != corev1.ConditionTrue ||
		!strings.Contains(d.Message, "quota exceeded") {
		t.Fatalf("Degraded = %+v, want it naming the refusal", d)
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
			Type:           corev1.EventTypeWarning, Reason: reason, Message: message, LastTimestamp: metav1.NewTime(now.Add(-age))}
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
