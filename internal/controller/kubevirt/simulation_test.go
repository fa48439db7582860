package kubevirt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

// Seventy-two hours on a fake clock of random holds (pause, windows closed, a
// failing preflight), random API errors on every verb, and random target
// changes (virt-template off and on, an upgrade, a rollback), ending with an
// uninstall held by a workload. After every step: every certificate a
// component that exists mounts is there and valid; every strategy ConfigMap
// status.installStrategies records is still there; and a step whose only
// change is a burst of transient errors, from a settled status, writes no
// status. Seeded: TEST_SEED replays a failure's seed.
func TestSeventyTwoHoursKeepCertificatesValidAndStatusQuiet(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	if s := os.Getenv("TEST_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seeds = []uint64{n}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			simulate(t, seed)
		})
	}
}

// faults fails a share of the API calls while on, each with an error of its
// verb's kind, transient ones only when transientOnly.
type faults struct {
	rng           *rand.Rand
	on            bool
	transientOnly bool
	share         float64
}

func (f *faults) fail(verb string, obj any) error {
	if !f.on || f.rng.Float64() >= f.share {
		return nil
	}
	gr := schema.GroupResource{Resource: fmt.Sprintf("%T", obj)}
	if f.transientOnly || f.rng.IntN(2) == 0 {
		switch f.rng.IntN(3) {
		case 0:
			return apierrors.NewServiceUnavailable("the API server is restarting")
		case 1:
			return apierrors.NewConflict(gr, "x", errors.New("the object has been modified"))
		default:
			return apierrors.NewTimeoutError("the request timed out", 1)
		}
	}
	if verb == "create" {
		return apierrors.NewForbidden(gr, "x", errors.New("exceeded quota"))
	}
	return apierrors.NewInternalError(errors.New("etcd is unhappy"))
}

func (f *faults) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := f.fail("get", obj); err != nil {
				return err
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := f.fail("list", list); err != nil {
				return err
			}
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := f.fail("create", obj); err != nil {
				return err
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := f.fail("update", obj); err != nil {
				return err
			}
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if err := f.fail("patch", obj); err != nil {
				return err
			}
			return c.Patch(ctx, obj, p, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if err := f.fail("apply", obj); err != nil {
				return err
			}
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if err := f.fail("delete", obj); err != nil {
				return err
			}
			return c.Delete(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := f.fail("patch", obj); err != nil {
				return err
			}
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	}
}

func simulate(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 72))
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("seed %d (TEST_SEED=%d replays it): "+format, append([]any{seed, seed}, a...)...)
	}
	e := newUpgradeEnvFrom(t, "v1.9.0", func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0" })
	f := &faults{rng: rng, share: 0.15}
	faulty := interceptor.NewClient(e.c, f.funcs())
	e.r.Client, e.r.APIReader, e.certs.Client = faulty, faulty, faulty
	e.r.source, e.r.sourceOnce = nil, sync.Once{} // made again from the faulty client
	preflightFails := false
	e.r.ServerVersion = func() (*version.Info, error) {
		if preflightFails {
			return &version.Info{Major: "1", Minor: "20"}, nil
		}
		return &version.Info{Major: "1", Minor: "33"}, nil
	}
	ctx := context.Background()
	req := reconcile.Request{NamespacedName: e.key}
	pass := func() {
		for range 3 {
			_, _ = e.r.Reconcile(ctx, req)
			_, _ = e.certs.Reconcile(ctx, req)
			runStrategyJobs(t, e)
		}
	}
	edit := func(change func(*v1.KubeVirt)) {
		kv := e.kubevirt()
		change(kv)
		if err := e.c.Update(ctx, kv); err != nil {
			fail("editing the CR: %v", err)
		}
	}
	now := heldT0
	end := heldT0.Add(72 * time.Hour)
	faultyBefore := false
	for step := 0; now.Before(end); step++ {
		now = now.Add(time.Duration(20+rng.IntN(220)) * time.Minute)
		e.clock.SetTime(now)
		switch rng.IntN(10) {
		case 0:
			edit(func(kv *v1.KubeVirt) { kv.Spec.Paused = !kv.Spec.Paused })
		case 1:
			edit(func(kv *v1.KubeVirt) {
				if len(kv.Spec.RolloutWindows) > 0 {
					kv.Spec.RolloutWindows = nil
				} else {
					kv.Spec.RolloutWindows = []v1.MaintenanceWindow{{Start: "03:00", Duration: v1.Duration{Duration: time.Hour}}}
				}
			})
		case 2:
			preflightFails = !preflightFails
		case 3:
			edit(func(kv *v1.KubeVirt) {
				if kv.Spec.Configuration.DeveloperConfiguration == nil {
					kv.Spec.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{DisabledFeatureGates: []string{"Template"}}
				} else {
					kv.Spec.Configuration.DeveloperConfiguration = nil
				}
			})
		case 4:
			edit(func(kv *v1.KubeVirt) {
				if kv.Spec.ImageTag == "v1.9.0" {
					kv.Spec.ImageTag = "v1.8.4"
				} else {
					kv.Spec.ImageTag = "v1.9.0"
				}
			})
		}
		// Errors come in bursts, never two steps running (a certificate due is
		// renewed by the next clean step, well within its last fifth).
		f.on, f.transientOnly = !faultyBefore && rng.IntN(3) == 0, rng.IntN(2) == 0
		faultyBefore = f.on
		pass()
		f.on = false
		checkMountedCertificates(t, e, now, fail)
		checkAcceptedStrategies(t, e, fail)
		if step%5 == 0 {
			checkQuietUnderTransientErrors(t, e, f, pass, fail)
		}
	}
	// The uninstall, held by a workload: the certificates of what runs stay valid.
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm-1"}}
	if err := e.c.Create(ctx, vmi); err == nil {
		edit(func(kv *v1.KubeVirt) { kv.Spec.Paused = false })
		if err := e.c.Delete(ctx, e.kubevirt()); err != nil {
			fail("deleting the CR: %v", err)
		}
		for range 6 {
			now = now.Add(4 * time.Hour)
			e.clock.SetTime(now)
			pass()
			checkMountedCertificates(t, e, now, fail)
		}
	}
}

// runStrategyJobs plays the strategy Jobs: a Job without its strategy writes
// it (this operator's rendering for the Job's config) and completes.
func runStrategyJobs(t *testing.T, e *upgradeEnv) {
	t.Helper()
	ctx := context.Background()
	jobs := &batchv1.JobList{}
	if err := e.c.List(ctx, jobs, client.InNamespace("kubevirt")); err != nil {
		t.Fatal(err)
	}
	for i := range jobs.Items {
		job := &jobs.Items[i]
		if len(job.Status.Conditions) > 0 {
			continue
		}
		var raw string
		for _, env := range job.Spec.Template.Spec.Containers[0].Env {
			if env.Name == "TARGET_DEPLOYMENT_CONFIG" {
				raw = env.Value
			}
		}
		cfg, err := deployid.ParseUpstream(raw)
		if err != nil {
			t.Fatalf("the Job's config: %v", err)
		}
		s, err := generate.Generate(generate.Input{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		cm, err := strategy.Encode(s, cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		cm.Name = "kubevirt-install-strategy-" + cfg.ID[:8] + "-" + strconv.Itoa(i)
		if err := e.c.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(e.clock.Now())}}
		if err := e.c.Status().Update(ctx, job); err != nil {
			t.Fatal(err)
		}
	}
}

// checkMountedCertificates: every certificate Secret a Deployment or
// DaemonSet that exists mounts is there and valid at now.
func checkMountedCertificates(t *testing.T, e *upgradeEnv, now time.Time, fail func(string, ...any)) {
	t.Helper()
	ctx := context.Background()
	var templates []*corev1.PodTemplateSpec
	deps := &appsv1.DeploymentList{}
	dss := &appsv1.DaemonSetList{}
	if err := e.c.List(ctx, deps, client.InNamespace("kubevirt")); err != nil {
		t.Fatal(err)
	}
	if err := e.c.List(ctx, dss, client.InNamespace("kubevirt")); err != nil {
		t.Fatal(err)
	}
	for i := range deps.Items {
		templates = append(templates, &deps.Items[i].Spec.Template)
	}
	for i := range dss.Items {
		templates = append(templates, &dss.Items[i].Spec.Template)
	}
	mounted := 0
	for _, tmpl := range templates {
		for _, vol := range tmpl.Spec.Volumes {
			if vol.Secret == nil || !certs.IsCertificateObject("Secret", vol.Secret.SecretName, "kubevirt") {
				continue
			}
			mounted++
			sec := &corev1.Secret{}
			if err := e.c.Get(ctx, client.ObjectKey{Namespace: "kubevirt", Name: vol.Secret.SecretName}, sec); err != nil {
				fail("at %s the mounted certificate %s: %v", now, vol.Secret.SecretName, err)
			}
			kp, err := certs.ParseSecret(sec)
			if err != nil {
				fail("at %s the mounted certificate %s: %v", now, sec.Name, err)
			}
			if now.Before(kp.Cert.NotBefore) || !now.Before(kp.Cert.NotAfter) {
				fail("at %s the mounted certificate %s is not valid (%s to %s)", now, sec.Name, kp.Cert.NotBefore, kp.Cert.NotAfter)
			}
		}
	}
	if mounted == 0 {
		fail("no component mounts a certificate: the check checks nothing")
	}
}

// checkAcceptedStrategies: every strategy ConfigMap the status records as
// accepted is still there.
func checkAcceptedStrategies(t *testing.T, e *upgradeEnv, fail func(string, ...any)) {
	t.Helper()
	for _, ref := range e.kubevirt().Status.InstallStrategies {
		cm := &corev1.ConfigMap{}
		if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "kubevirt", Name: ref.ConfigMap}, cm); err != nil || string(cm.UID) != ref.UID {
			fail("the accepted strategy %s of %s is gone (%v)", ref.ConfigMap, ref.DeploymentID, err)
		}
	}
}

// checkQuietUnderTransientErrors: once a clean pass writes no status, a pass
// that meets transient errors only, within their grace, writes none either.
func checkQuietUnderTransientErrors(t *testing.T, e *upgradeEnv, f *faults, pass func(), fail func(string, ...any)) {
	t.Helper()
	settled := ""
	for range 5 {
		before := e.kubevirt().ResourceVersion
		pass()
		if after := e.kubevirt().ResourceVersion; after == before {
			settled = after
			break
		}
	}
	if settled == "" || e.kubevirt().DeletionTimestamp != nil {
		return // still moving (a Job to run, a rollout step): nothing to compare
	}
	f.on, f.transientOnly, f.share = true, true, 0.3
	defer func() { f.on, f.share = false, 0.15 }()
	prev := e.kubevirt()
	pass()
	if now := e.kubevirt(); now.ResourceVersion != settled {
		fail("a pass meeting transient errors only changed a settled status: %s", kubeVirtChanges(prev, now))
	}
}

// kubeVirtChanges names the status fields that differ.
func kubeVirtChanges(a, b *v1.KubeVirt) string {
	flat := func(st v1.KubeVirtStatus) map[string]string {
		out := map[string]string{}
		var walk func(prefix string, v any)
		walk = func(prefix string, v any) {
			switch t := v.(type) {
			case map[string]any:
				for k, e := range t {
					walk(prefix+"."+k, e)
				}
			case []any:
				for i, e := range t {
					walk(fmt.Sprintf("%s[%d]", prefix, i), e)
				}
			default:
				raw, _ := json.Marshal(t)
				out[prefix] = string(raw)
			}
		}
		raw, _ := json.Marshal(st)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		walk("status", m)
		return out
	}
	fa, fb := flat(a.Status), flat(b.Status)
	var diffs []string
	for k, va := range fa {
		if vb := fb[k]; vb != va {
			diffs = append(diffs, fmt.Sprintf("%s: %s → %s", k, va, vb))
		}
	}
	for k, vb := range fb {
		if _, ok := fa[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: (none) → %s", k, vb))
		}
	}
	sort.Strings(diffs)
	return "\n  " + strings.Join(diffs, "\n  ")
}
