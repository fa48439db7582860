package kubevirt

import (
	"context"
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
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/dumpjob"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

// strategyEnv is a fresh KubeVirt CR asking for imageTag on a fake client,
// with extra objects, and a recorder of the operator's Events.
type strategyEnv struct {
	t     *testing.T
	c     client.WithWatch
	r     *Reconciler
	rec   *events.FakeRecorder
	clock *clocktesting.FakeClock
	kv    *v1.KubeVirt
	cfg   *deployid.Config
}

func newStrategyEnv(t *testing.T, imageTag string, now time.Time, extra func(cfg *deployid.Config) []client.Object) *strategyEnv {
	t.Helper()
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt", Finalizers: []string{metadata.KubeVirtFinalizer}},
		Spec: v1.KubeVirtSpec{ImageTag: imageTag}}
	cfg, err := deployid.FromKubeVirt(kv, operatorEnv)
	if err != nil {
		t.Fatal(err)
	}
	objs := append([]client.Object{kv}, extra(cfg)...)
	e := &strategyEnv{t: t, kv: kv, cfg: cfg, clock: clocktesting.NewFakeClock(now), rec: events.NewFakeRecorder(1000)}
	e.c = fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).WithStatusSubresource(&v1.KubeVirt{}).
		WithIndex(&corev1.Event{}, "involvedObject.uid", func(o client.Object) []string {
			return []string{string(o.(*corev1.Event).InvolvedObject.UID)}
		}).Build()
	e.r = &Reconciler{Client: e.c, APIReader: e.c, Namespace: "kubevirt", Env: operatorEnv, ServiceAccount: "virt-operator-strategy-dumper",
		Clock: e.clock, Recorder: e.rec}
	return e
}

func (e *strategyEnv) reconcile() (reconcile.Result, error) {
	return e.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.kv)})
}

func (e *strategyEnv) exists(obj client.Object) bool {
	e.t.Helper()
	err := e.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatal(err)
	}
	return err == nil
}

func (e *strategyEnv) status() v1.KubeVirtStatus {
	e.t.Helper()
	got := &v1.KubeVirt{}
	if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(e.kv), got); err != nil {
		e.t.Fatal(err)
	}
	return got.Status
}

// warned: a Warning of reason whose message holds every fragment was sent.
func (e *strategyEnv) warned(reason string, fragments ...string) bool {
	for {
		select {
		case ev := <-e.rec.Events:
			if !strings.HasPrefix(ev, "Warning "+reason) {
				continue
			}
			all := true
			for _, f := range fragments {
				all = all && strings.Contains(ev, f)
			}
			if all {
				return true
			}
		default:
			return false
		}
	}
}

func (e *strategyEnv) jobs() []batchv1.Job {
	e.t.Helper()
	list := &batchv1.JobList{}
	if err := e.c.List(context.Background(), list, client.InNamespace("kubevirt")); err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

// planted is a strategy ConfigMap for cfg's ID holding objects, as anyone
// who can write ConfigMaps could create it, created at created.
func planted(t *testing.T, cfg *deployid.Config, name string, created time.Time, monitoring string, objs ...client.Object) *corev1.ConfigMap {
	t.Helper()
	s := &strategy.Strategy{}
	for _, o := range objs {
		if err := s.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	cm, err := strategy.Encode(s, cfg, monitoring)
	if err != nil {
		t.Fatal(err)
	}
	cm.Name, cm.UID, cm.CreationTimestamp = name, types.UID(name), metav1.NewTime(created)
	return cm
}

// everyoneIsAdmin is review 4's F1 payload: kubevirt.io:default granting
// everything, bound to every authenticated user.
func everyoneIsAdmin() []client.Object {
	return []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt.io:default"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt.io:default"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubevirt.io:default"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:authenticated"}}},
	}
}

// A delegated release (v1.7.4, rendered by its own operator image) gets its
// strategy Job only once the writer policy is in force and settled; a
// ConfigMap planted before that is refused, named in a Warning, and deleted,
// never applied (review 4 F1: a ConfigMap created while the Job waited on an
// image pull was applied).
func TestDelegatedStrategyWaitsForTheWriterPolicy(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var plantedCM *corev1.ConfigMap
	e := newStrategyEnv(t, "v1.7.4", now, func(cfg *deployid.Config) []client.Object {
		plantedCM = planted(t, cfg, "kubevirt-install-strategy-planted", now.Add(-time.Second), "", everyoneIsAdmin()...)
		return []client.Object{plantedCM}
	})
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	policy, binding, err := strategysource.DesiredWriterPolicy("kubevirt", e.r.ServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	if !e.exists(policy) || !e.exists(binding) {
		t.Fatal("the writer policy was not written for a delegated release")
	}
	if e.exists(plantedCM) || e.exists(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt.io:default"}}) {
		t.Fatal("the planted strategy was kept or applied")
	}
	if !e.warned(strategysource.ReasonUntrusted, plantedCM.Name, "writer policy") {
		t.Fatal("no Warning names the planted ConfigMap and why it is refused")
	}
	if jobs := e.jobs(); len(jobs) != 0 {
		t.Fatalf("a strategy Job was created before the writer policy was in force: %v", jobs[0].Name)
	}
	// The API server stamps the policy's creation (the fake client does not):
	// once it has been in force for the settle time, the Job is created.
	for _, o := range []client.Object{policy, binding} {
		o.SetCreationTimestamp(metav1.NewTime(now))
		if err := e.c.Update(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Step(11 * time.Second)
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	jobs := e.jobs()
	if len(jobs) != 1 || jobs[0].Spec.Template.Spec.Containers[0].Image != "quay.io/kubevirt/virt-operator:v1.7.4" {
		t.Fatalf("Jobs %d, want one running the release's own operator", len(jobs))
	}
}

// Whatever its provenance, a strategy over the ceiling is refused whole: here
// a ConfigMap written while the strategy Job ran, under the writer policy
// (as the Job itself would), grants everything to everyone. Nothing of it is
// applied, Degraded names it, and it is not deleted (it would be generated
// the same again).
func TestStrategyOverTheCeilingIsNeverApplied(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var cm *corev1.ConfigMap
	e := newStrategyEnv(t, "v1.7.4", now, func(cfg *deployid.Config) []client.Object {
		policy, binding, err := strategysource.DesiredWriterPolicy("kubevirt", "virt-operator-strategy-dumper")
		if err != nil {
			t.Fatal(err)
		}
		policy.CreationTimestamp, binding.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour)), metav1.NewTime(now.Add(-time.Hour))
		job := dumpjob.New(cfg, "virt-operator-strategy-dumper", 0)
		job.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
		cm = planted(t, cfg, "kubevirt-install-strategy-genuine-looking", now.Add(-30*time.Second), "", everyoneIsAdmin()...)
		return []client.Object{policy, binding, job, cm}
	})
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	if e.exists(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt.io:default"}}) ||
		e.exists(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt.io:default"}}) {
		t.Fatal("a strategy over the ceiling was applied")
	}
	st := e.status()
	d := findCondition(st.Conditions, v1.KubeVirtConditionDegraded)
	if d == nil || d.Reason != strategysource.ReasonOverCeiling || !strings.Contains(d.Message, cm.Name) || !strings.Contains(d.Message, "names every API group") {
		t.Fatalf("Degraded %+v, want %s naming the ConfigMap and the rule", d, strategysource.ReasonOverCeiling)
	}
	if len(st.InstallStrategies) != 0 {
		t.Fatalf("installStrategies %+v: a strategy over the ceiling was recorded as accepted", st.InstallStrategies)
	}
	if !e.exists(cm) {
		t.Fatal("the ConfigMap over the ceiling was deleted (it would be generated the same again)")
	}
	if !e.warned(strategysource.ReasonOverCeiling, cm.Name) {
		t.Fatal("no Warning names the strategy over the ceiling")
	}
}

// A builtin release's ConfigMap is compared with the operator's rendering for
// the live monitoring answer, not for the monitoring namespace the ConfigMap
// claims: a genuine-looking rendering for attacker-ns (its kubevirt-monitoring
// Role bound to a ServiceAccount there) is refused (review 4 F9).
func TestRenderingForAnotherMonitoringNamespaceIsRefused(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var cm *corev1.ConfigMap
	e := newStrategyEnv(t, "v1.9.0", now, func(cfg *deployid.Config) []client.Object {
		s, err := generate.Generate(generate.Input{Config: cfg, MonitorNamespace: "attacker-ns"})
		if err != nil {
			t.Fatal(err)
		}
		if cm, err = strategy.Encode(s, cfg, "attacker-ns"); err != nil {
			t.Fatal(err)
		}
		cm.Name, cm.UID = "kubevirt-install-strategy-attacker", "attacker"
		return []client.Object{cm}
	})
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	if e.exists(cm) || !e.warned(strategysource.ReasonUntrusted, cm.Name, "live monitoring namespace") {
		t.Fatal("a rendering for another monitoring namespace was not refused")
	}
	if len(e.status().InstallStrategies) != 0 || len(e.jobs()) != 1 {
		t.Fatal("want nothing accepted and the operator's own Job generating the strategy")
	}
}

// A ConfigMap that makes vouching fail (its content names a monitoring
// namespace the generator refuses) is refused like any other; the pass goes
// on, the accepted strategy stays recorded (review 4 F2: every pass
// ended there, before the certificates).
func TestAConfigMapThatFailsVouchingIsRefusedAtRest(t *testing.T) {
	e := newUpgradeEnv(t, func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.8.4" })
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	prev := e.kubevirt().Status
	before := prev.InstallStrategies
	if len(before) != 1 {
		t.Fatalf("installStrategies %+v at rest, want the v1.8.4 strategy", before)
	}
	cfg, err := deployid.Parse(e.kubevirt().Status.TargetDeploymentConfig)
	if err != nil {
		t.Fatal(err)
	}
	bad := planted(t, cfg, "kubevirt-install-strategy-bad", heldT0, "Not_A_Namespace",
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: strategy.MonitoringRoleBinding},
			RoleRef:  rbacv1.RoleRef{Kind: "Role", Name: "kubevirt-monitoring"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "Not_A_Namespace", Name: "prometheus-k8s"}}})
	if err := e.c.Create(context.Background(), bad); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reconcile(); err != nil {
		t.Fatalf("a ConfigMap that fails vouching ended the pass: %v", err)
	}
	if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(bad), &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the ConfigMap is still there (%v)", err)
	}
	after := e.kubevirt().Status
	if len(after.InstallStrategies) != 1 || after.InstallStrategies[0] != before[0] {
		t.Fatalf("installStrategies %+v, want %+v kept", after.InstallStrategies, before)
	}
	if a, b := findCondition(prev.Conditions, v1.KubeVirtConditionAvailable), findCondition(after.Conditions, v1.KubeVirtConditionAvailable); *a != *b {
		t.Fatalf("Available %+v, want it unchanged from %+v", b, a)
	}
}

// An error in the strategy phase leaves status.installStrategies as it was
// (architecture review 4 D2: it was written empty, and on a delegated release
// the next pass deleted the accepted ConfigMap).
func TestAStrategyPhaseErrorKeepsTheAcceptedRecord(t *testing.T) {
	e := newUpgradeEnv(t, func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.8.4" })
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	before := e.kubevirt().Status.InstallStrategies
	failing := interceptor.NewClient(e.c, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch,
		key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*corev1.ServiceAccount); ok {
			return apierrors.NewServiceUnavailable("the API server is restarting")
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	e.r = &Reconciler{Client: failing, APIReader: failing, Namespace: "kubevirt", Env: operatorEnv, ServiceAccount: "virt-operator",
		Clock: e.clock, Recorder: events.NewFakeRecorder(100)}
	if _, err := e.reconcile(); err == nil {
		t.Fatal("the injected error did not stop the strategy phase")
	}
	if after := e.kubevirt().Status.InstallStrategies; len(after) != len(before) || after[0] != before[0] {
		t.Fatalf("installStrategies %+v after an error, want %+v kept", after, before)
	}
}

// A Job squatting the strategy Job's name (without the operator's label, so
// never listed) is reported in Degraded, not waited on in silence (review 4
// F11: a 1 s requeue loop with nothing said).
func TestASquattedJobNameIsReported(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	e := newStrategyEnv(t, "v1.9.0", now, func(cfg *deployid.Config) []client.Object {
		return []client.Object{&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: dumpjob.Name(cfg.ID, 0)}}}
	})
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	d := findCondition(e.status().Conditions, v1.KubeVirtConditionDegraded)
	if d == nil || d.Reason != strategysource.ReasonJobBlocked || !strings.Contains(d.Message, "in the way") {
		t.Fatalf("Degraded %+v, want %s saying a Job is in the way", d, strategysource.ReasonJobBlocked)
	}
}
