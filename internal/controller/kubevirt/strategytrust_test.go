package kubevirt

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

func TestTrustOf(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef01234567"
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	cm := func(uid string, created time.Duration, payload string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + uid, UID: types.UID(uid), CreationTimestamp: at(created)},
			Data: map[string]string{strategy.ManifestsKey: payload}}
	}
	job := func(name string, created time.Duration) batchv1.Job {
		return batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: at(created),
			Annotations: map[string]string{metadata.InstallStrategyIdentifierAnnotation: id, attemptAnnotation: "0"}}}
	}
	ours := job(StrategyJobName(id, 0), 0)
	accepted := []v1.InstallStrategyRef{{DeploymentID: id, UID: "a", Digest: strategy.Digest(cm("a", 0, "x")), Source: TrustJob}}
	yes := func() (bool, error) { return true, nil }
	no := func() (bool, error) { return false, nil }
	for _, tc := range []struct {
		name     string
		cm       *corev1.ConfigMap
		accepted []v1.InstallStrategyRef
		jobs     []batchv1.Job
		render   func() (bool, error)
		want     string // source, "" when refused
	}{
		{"accepted before, unchanged", cm("a", time.Hour, "x"), accepted, nil, nil, TrustJob},
		{"accepted before, then edited", cm("a", time.Hour, "edited"), accepted, nil, nil, ""},
		{"another ConfigMap claiming an accepted ID", cm("b", time.Hour, "x"), accepted, []batchv1.Job{ours}, no, ""},
		{"a builtin release, equal to our rendering", cm("b", time.Hour, "x"), nil, nil, yes, TrustRendered},
		{"a builtin release, not our rendering, even with our Job", cm("b", time.Hour, "x"), nil, []batchv1.Job{ours}, no, ""},
		{"a delegated release, written by our Job", cm("b", time.Second, "x"), nil, []batchv1.Job{ours}, nil, TrustJob},
		{"a delegated release, older than our Job", cm("b", -time.Second, "x"), nil, []batchv1.Job{ours}, nil, ""},
		{"a delegated release, no Job", cm("b", time.Second, "x"), nil, nil, nil, ""},
		{"a delegated release, a Job not named as ours", cm("b", time.Second, "x"), nil, []batchv1.Job{job("planted", 0)}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			source, ok, err := trustOf(tc.cm, id, tc.accepted, tc.jobs, tc.render)
			if err != nil || ok != (tc.want != "") || (ok && source != tc.want) {
				t.Fatalf("trusted %v as %q (%v), want %q", ok, source, err, tc.want)
			}
		})
	}
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
		if strings.HasPrefix(ev, "Warning "+ReasonUntrustedStrategy) && strings.Contains(ev, planted.Name) {
			return
		}
	}
	t.Fatal("no Warning names the planted ConfigMap")
}
