package kubevirt

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/strategysource"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/diagnose"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/dumpjob"
)

const noSuchAccount = `Error creating: pods "virt-operator-install-strategy-abc-" is forbidden: error looking up service account kubevirt/virt-operator: serviceaccount "virt-operator" not found`

func jobEvent(name string, uid types.UID, reason, message string, at time.Time) corev1.Event {
	return corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: "Job", Name: "virt-operator-install-strategy-abc", UID: uid},
		Type:           corev1.EventTypeWarning, Reason: reason, Message: message, LastTimestamp: metav1.NewTime(at),
		Source: corev1.EventSource{Component: diagnose.JobController}}
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
	job := dumpjob.New(cfg, "virt-operator", 0)
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
	if res.RequeueAfter != 2*time.Second {
		t.Fatalf("requeue after %v, want %v", res.RequeueAfter, 2*time.Second)
	}
	got := &v1.KubeVirt{}
	if err := c.Get(context.Background(), key, got); err != nil {
		t.Fatal(err)
	}
	d := findCondition(got.Status.Conditions, v1.KubeVirtConditionDegraded)
	if d == nil || d.Status != corev1.ConditionTrue || d.Reason != strategysource.ReasonJobBlocked ||
		!strings.Contains(d.Message, `serviceaccount "virt-operator" not found`) {
		t.Fatalf("Degraded = %+v, want True, %s, naming the missing ServiceAccount", d, strategysource.ReasonJobBlocked)
	}
	close(rec.Events)
	var seen []string
	for ev := range rec.Events {
		if strings.HasPrefix(ev, "Warning "+strategysource.ReasonJobBlocked) {
			return
		}
		seen = append(seen, ev)
	}
	t.Fatalf("no Warning %s among %q", strategysource.ReasonJobBlocked, seen)
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
	// Degraded names what failed and how, not the API server's raw text,
	// which the Warning carries.
	if d := findCondition(got.Status.Conditions, v1.KubeVirtConditionDegraded); d == nil || d.Status != corev1.ConditionTrue ||
		!strings.Contains(d.Message, "creating the install-strategy Job: the API server refused it (Forbidden)") || strings.Contains(d.Message, "quota exceeded") {
		t.Fatalf("Degraded = %+v, want it naming the refusal without the raw text", d)
	}
	recorder := r.Recorder.(*events.FakeRecorder)
	close(recorder.Events)
	for ev := range recorder.Events {
		if strings.HasPrefix(ev, "Warning "+ReasonDeploymentFailed) && strings.Contains(ev, "quota exceeded") {
			return
		}
	}
	t.Fatal("no Warning carries the API server's refusal")
}

// A ConfigMap planted for the target's ID, with the strategy's label and
// annotations and a kubevirt.io:default granting everything, is never applied:
// it is deleted with a Warning naming it, and the operator generates the
// strategy itself.
func TestPlantedStrategyIsNeverApplied(t *testing.T) {
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt", Finalizers: []string{metadata.KubeVirtFinalizer}},
		Spec: v1.KubeVirtSpec{ImageTag: "v1.9.0"}}
	cfg, err := deployid.FromKubeVirt(kv, operatorEnv)
	if err != nil {
		t.Fatal(err)
	}
	evil := &strategy.Strategy{}
	if err := evil.Add(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt.io:default"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}); err != nil {
		t.Fatal(err)
	}
	planted, err := strategy.Encode(evil, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	planted.Name = "kubevirt-install-strategy-planted"
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(kv, planted).WithStatusSubresource(&v1.KubeVirt{}).
		WithIndex(&corev1.Event{}, "involvedObject.uid", func(o client.Object) []string {
			return []string{string(o.(*corev1.Event).InvolvedObject.UID)}
		}).Build()
	rec := events.NewFakeRecorder(100)
	r := &Reconciler{Client: c, APIReader: c, Namespace: "kubevirt", Env: operatorEnv, ServiceAccount: "virt-operator",
		Clock: clocktesting.NewFakePassiveClock(t0), Recorder: rec}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(kv)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(planted), &corev1.ConfigMap{}); err == nil {
		t.Fatal("the planted ConfigMap is still there")
	}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "kubevirt.io:default"}, &rbacv1.ClusterRole{}); err == nil {
		t.Fatal("the planted strategy was applied")
	}
	jobs := &batchv1.JobList{}
	if err := c.List(context.Background(), jobs); err != nil || len(jobs.Items) != 1 {
		t.Fatalf("%d strategy Jobs (%v): want the strategy generated by the operator's own Job", len(jobs.Items), err)
	}
	close(rec.Events)
	for ev := range rec.Events {
		if strings.HasPrefix(ev, "Warning "+strategysource.ReasonUntrusted) && strings.Contains(ev, planted.Name) {
			return
		}
	}
	t.Fatal("no Warning names the planted ConfigMap")
}
