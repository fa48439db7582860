package install_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/operator"
	"github.com/virt-operator/virt-operator/internal/sandbox"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

const (
	namespace     = "kubevirt"
	operatorImage = "quay.io/kubevirt/virt-operator:v1.8.4"
)

// The in-process operator's logs are not part of the test output (the sandbox's
// component logs are, on failure): saying so explicitly also keeps
// controller-runtime from printing a stack trace about a logger never set.
// The in-process operator logs nowhere unless E2E_OPERATOR_LOG names a file
// (benchmarks stay quiet; a failing run can be replayed with its log).
func init() {
	path := os.Getenv("E2E_OPERATOR_LOG")
	if path == "" {
		ctrllog.SetLogger(logr.Discard())
		return
	}
	f, err := os.Create(path)
	if err != nil {
		panic(err)
	}
	ctrllog.SetLogger(zap.New(zap.WriteTo(f)))
}

// env is a sandbox with the operator running in this process. Every test of
// the package starts its own and calls t.Parallel: nothing is shared between
// tests but the RBAC record (locked) and the built binaries (built once).
type env struct {
	t      testing.TB
	sb     *sandbox.Sandbox
	c      client.Client
	ctx    context.Context
	cancel context.CancelFunc
	done   chan error
	audit  string // the API server's audit log, if it keeps one
	// loadPids are processes outside the sandbox whose CPU a load sample
	// reads beside its components' (the operator, the benchmark itself).
	loadPids map[string]int
}

func startEnv(t testing.TB, nodes int, opts ...func(*sandbox.Options)) *env {
	t.Helper()
	e := startEnvWithoutOperator(t, nodes, opts...)
	e.startOperator()
	t.Cleanup(e.stopOperator)
	return e
}

// startEnvWithoutOperator is the sandbox with the operator's namespace and
// ServiceAccount, for tests that run the operator themselves.
func startEnvWithoutOperator(t testing.TB, nodes int, opts ...func(*sandbox.Options)) *env {
	t.Helper()
	// Every test's sandbox keeps an audit log: the operator's requests in it feed
	// the RBAC check (rbac_test.go). Benchmarks keep one only if they ask.
	var audit string
	_, bench := t.(*testing.B)
	withAudit := func(o *sandbox.Options) {
		if o.AuditLog == "" && !bench {
			o.AuditLog = filepath.Join(t.TempDir(), "audit.log")
		}
		// The operator's requests (and those of upstream's, which a take-over
		// test waits on) are all the tests read: the rest of the cluster's,
		// a fifth of the API server's CPU when logged, are not.
		if o.AuditUsers == nil && !bench {
			o.AuditUsers = []string{operatorUser, upstreamOperatorUser}
		}
		audit = o.AuditLog
	}
	sb := sandboxtest.Start(t, nodes, append(opts, sandboxtest.WithHostExec(t), withAudit)...)
	if !bench {
		t.Cleanup(func() { recordOperatorRequests(t, audit) })
	}
	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	// The test's own client is not what is measured: client-go's 5 QPS (the
	// operator keeps them) paced its reads of a whole strategy to 20 s.
	cfg := sb.RESTConfig()
	cfg.QPS, cfg.Burst = 200, 400
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, sb: sb, c: c, audit: audit}
	sandboxtest.InstallOperatorManifests(t, c, namespace)
	return e
}

// operatorKubeconfig is a kubeconfig file with the virt-operator
// ServiceAccount's token, for the operator run as its own process: it runs
// with exactly the RBAC config/ grants it, and its requests are audited as
// the operator's.
func (e *env) operatorKubeconfig() string {
	e.t.Helper()
	path := filepath.Join(e.t.TempDir(), "virt-operator.kubeconfig")
	if err := e.sb.WriteKubeconfig(path, e.operatorConfig().BearerToken); err != nil {
		e.t.Fatal(err)
	}
	return path
}

// operatorConfig is a client config with the virt-operator ServiceAccount's
// token: the operator runs with exactly the RBAC config/ grants it.
func (e *env) operatorConfig() *rest.Config {
	e.t.Helper()
	return sandboxtest.ServiceAccountConfig(e.t, e.c, e.sb.RESTConfig(), namespace, "virt-operator")
}

// startOperator runs the operator in this process, its options changed by mutate.
func (e *env) startOperator(mutate ...func(*operator.Options)) {
	cfg := e.operatorConfig()
	e.ctx, e.cancel = context.WithCancel(context.Background())
	e.done = make(chan error, 1)
	opts := operator.Options{
		Namespace: namespace, MetricsAddr: "0", HealthAddr: "0", LeaderElection: true,
		Env: deployid.MapEnv{"VIRT_OPERATOR_IMAGE": operatorImage},
	}
	for _, m := range mutate {
		m(&opts)
	}
	go func() { e.done <- operator.Run(e.ctx, cfg, opts) }()
}

func (e *env) stopOperator() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	if err := <-e.done; err != nil {
		e.t.Errorf("operator exited with %v", err)
	}
	e.cancel = nil
}

func (e *env) createKubeVirt(spec v1.KubeVirtSpec) *v1.KubeVirt {
	e.t.Helper()
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: namespace}, Spec: spec}
	if err := e.c.Create(context.Background(), kv); err != nil {
		e.t.Fatal(err)
	}
	return kv
}

func (e *env) kubeVirt() *v1.KubeVirt {
	e.t.Helper()
	kv := &v1.KubeVirt{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "kubevirt"}, kv); err != nil {
		e.t.Fatal(err)
	}
	return kv
}

// updateSpec changes the spec with a merge patch: no optimistic lock, so the
// operator's frequent status writes cannot make it conflict.
func (e *env) updateSpec(mutate func(*v1.KubeVirtSpec)) {
	e.t.Helper()
	kv := e.kubeVirt()
	original := kv.DeepCopy()
	mutate(&kv.Spec)
	if err := e.c.Patch(context.Background(), kv, client.MergeFrom(original)); err != nil {
		e.t.Fatal(err)
	}
}

// eventually polls cond for up to timeout.
func (e *env) eventually(what string, timeout time.Duration, cond func() (bool, error)) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond() })
	if err != nil {
		kv := &v1.KubeVirt{}
		_ = e.c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "kubevirt"}, kv)
		e.t.Fatalf("waiting for %s: %v\nKubeVirt status: %s", what, err, statusJSON(kv))
	}
}

// statusJSON is kv's status for a failure message, without the long generations.
func statusJSON(kv *v1.KubeVirt) string {
	st := kv.Status.DeepCopy()
	st.Generations = nil // long, and never the reason for a wait
	out, _ := json.MarshalIndent(st, "", "  ")
	return string(out)
}

func (e *env) waitAvailable(timeout time.Duration) *v1.KubeVirt {
	e.t.Helper()
	var kv *v1.KubeVirt
	e.eventually("KubeVirt Deployed and Available", timeout, func() (bool, error) {
		kv = e.kubeVirt()
		return kv.Status.Phase == v1.KubeVirtPhaseDeployed && conditionTrue(kv, v1.KubeVirtConditionAvailable) &&
			kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID, nil
	})
	return kv
}

// waitSpecRolledOver is waitAvailable once the operator has rolled out the
// CR's spec as it is now: status.observedGeneration, written when the
// deployment for a generation is complete, at the CR's generation. A check
// after a spec change then sees what the change did, not the state before
// the operator had seen it, however long that took.
func (e *env) waitSpecRolledOver(timeout time.Duration) *v1.KubeVirt {
	e.t.Helper()
	var kv *v1.KubeVirt
	e.eventually("KubeVirt Deployed and Available at its current generation", timeout, func() (bool, error) {
		kv = e.kubeVirt()
		g := kv.Status.ObservedGeneration
		return kv.Status.Phase == v1.KubeVirtPhaseDeployed && conditionTrue(kv, v1.KubeVirtConditionAvailable) &&
			kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID && g != nil && *g == kv.Generation, nil
	})
	return kv
}

// workloadsSettled: every Deployment and DaemonSet of the install namespace
// has rolled out its current template (its controller has seen its
// generation, and every replica or scheduled pod is updated and ready), and
// no pod there is terminating. A template written before this held is in the
// pods once it does.
func (e *env) workloadsSettled() bool {
	e.t.Helper()
	for _, d := range e.deployments() {
		st := d.Status
		if want := *d.Spec.Replicas; st.ObservedGeneration != d.Generation || st.Replicas != want || st.UpdatedReplicas != want || st.ReadyReplicas != want {
			return false
		}
	}
	dss := &appsv1.DaemonSetList{}
	if err := e.c.List(context.Background(), dss, client.InNamespace(namespace)); err != nil {
		e.t.Fatal(err)
	}
	for _, ds := range dss.Items {
		st := ds.Status
		if st.ObservedGeneration != ds.Generation || st.UpdatedNumberScheduled != st.DesiredNumberScheduled || st.NumberReady != st.DesiredNumberScheduled {
			return false
		}
	}
	pods := &corev1.PodList{}
	if err := e.c.List(context.Background(), pods, client.InNamespace(namespace)); err != nil {
		e.t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			return false
		}
	}
	return true
}

// leaseHolder is the identity holding the operator's leader-election Lease
// (one per process), "" while none does.
func (e *env) leaseHolder() string {
	e.t.Helper()
	lease := &coordinationv1.Lease{}
	err := e.c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: operator.DefaultLeaderElectionID}, lease)
	if client.IgnoreNotFound(err) != nil {
		e.t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

func conditionTrue(kv *v1.KubeVirt, t v1.KubeVirtConditionType) bool {
	for _, c := range kv.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func condition(kv *v1.KubeVirt, t v1.KubeVirtConditionType) *v1.KubeVirtCondition {
	for i := range kv.Status.Conditions {
		if kv.Status.Conditions[i].Type == t {
			return &kv.Status.Conditions[i]
		}
	}
	return nil
}

func (e *env) deployments() []appsv1.Deployment {
	e.t.Helper()
	list := &appsv1.DeploymentList{}
	if err := e.c.List(context.Background(), list, client.InNamespace(namespace)); err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

func (e *env) podUIDs(selector map[string]string) map[string]bool {
	e.t.Helper()
	pods := &corev1.PodList{}
	if err := e.c.List(context.Background(), pods, client.InNamespace(namespace), client.MatchingLabels(selector)); err != nil {
		e.t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range pods.Items {
		out[string(p.UID)] = true
	}
	return out
}

func (e *env) deployment(name string) *appsv1.Deployment {
	e.t.Helper()
	d := &appsv1.Deployment{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, d); err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) strategyConfigMaps() []corev1.ConfigMap {
	e.t.Helper()
	list := &corev1.ConfigMapList{}
	if err := e.c.List(context.Background(), list, client.InNamespace(namespace), client.HasLabels{metadata.InstallStrategyLabel}); err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

func (e *env) loadStrategy(id string) *strategy.Strategy {
	e.t.Helper()
	cm := strategy.FindForID(e.strategyConfigMaps(), id)
	if cm == nil {
		e.t.Fatalf("no strategy ConfigMap for %s", id)
	}
	s, err := strategy.Decode(cm)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// managedObjects lists what still carries the operator's managed-by label.
func (e *env) managedObjects() []string {
	e.t.Helper()
	objs, err := apply.ListManaged(context.Background(), e.c, apply.Scope{}) // every namespace
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, apply.RefOf(o).String())
	}
	return out
}

func (e *env) daemonSet(name string) *appsv1.DaemonSet {
	e.t.Helper()
	ds := &appsv1.DaemonSet{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, ds); err != nil {
		e.t.Fatal(err)
	}
	return ds
}
