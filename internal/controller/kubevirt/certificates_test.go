package kubevirt

import (
	"context"
	"crypto/x509"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/controller/certificates"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

// upgradeEnv is a cluster on v1.8.4 (observed, its strategy cached) whose CR
// now asks for something else, through a fake client and a fake clock, with
// the KubeVirt controller and the certificate controller.
type upgradeEnv struct {
	t     *testing.T
	c     client.WithWatch
	r     *Reconciler
	certs *certificates.Reconciler
	clock *clocktesting.FakeClock
	key   types.NamespacedName
	// writes are the certificate writes in order ("Secret kubevirt-ca", ...).
	writes []string
	// failWrites fails every write of that kind.
	failWrites string
}

var operatorEnv = deployid.MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0"}

// t0 is a Wednesday.
var heldT0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func newUpgradeEnv(t *testing.T, spec func(*v1.KubeVirtSpec)) *upgradeEnv {
	t.Helper()
	return newUpgradeEnvFrom(t, "v1.8.4", spec)
}

// newUpgradeEnvFrom is upgradeEnv from the release imageTag names, whose CR
// then asks for v1.9.0 and spec's edits.
func newUpgradeEnvFrom(t *testing.T, imageTag string, spec func(*v1.KubeVirtSpec)) *upgradeEnv {
	t.Helper()
	e := &upgradeEnv{t: t, clock: clocktesting.NewFakeClock(heldT0), key: types.NamespacedName{Namespace: "kubevirt", Name: "kubevirt"}}
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt", Generation: 2,
		Finalizers: []string{metadata.KubeVirtFinalizer}}, Spec: v1.KubeVirtSpec{ImageTag: imageTag}}
	observed := strategyFor(t, kv)
	kv.Status = v1.KubeVirtStatus{Phase: v1.KubeVirtPhaseDeployed}
	setTarget(&kv.Status, observed.cfg)
	setObserved(&kv.Status, observed.cfg)
	objs := []client.Object{kv, observed.cm}
	wanted := kv.DeepCopy()
	wanted.Spec.ImageTag = "v1.9.0"
	spec(&wanted.Spec)
	if target, err := deployid.FromKubeVirt(wanted, operatorEnv); err == nil && !strings.HasSuffix(target.KubeVirtVersion, ".O") && target.ID != observed.cfg.ID {
		objs = append(objs, strategyFor(t, wanted).cm)
	}
	scheme := testScheme(t)
	e.c = buildFastReads(fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&v1.KubeVirt{}).
		WithIndex(&corev1.Event{}, "involvedObject.uid", func(o client.Object) []string {
			return []string{string(o.(*corev1.Event).InvolvedObject.UID)}
		}), scheme,
		&interceptor.Funcs{Patch: e.recordPatch, Apply: e.recordApply, Create: e.recordCreate, Update: e.recordUpdate})
	recorder := events.NewFakeRecorder(10000)
	wants := certificates.NewWants()
	e.r = &Reconciler{Client: e.c, APIReader: e.c, Namespace: "kubevirt", Env: operatorEnv, ServiceAccount: "virt-operator",
		Clock: e.clock, Recorder: recorder, Certificates: wants}
	e.certs = &certificates.Reconciler{Client: e.c, Namespace: "kubevirt", Clock: e.clock, Recorder: recorder, Wants: wants}
	// The observed release runs: what a pass at rest keeps (re)creates it.
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	live := e.kubevirt()
	live.Spec = wanted.Spec
	if err := e.c.Update(context.Background(), live); err != nil {
		t.Fatal(err)
	}
	e.writes = nil
	return e
}

type cachedStrategy struct {
	cm  *corev1.ConfigMap
	cfg *deployid.Config
}

// strategyFor is the builtin strategy of kv's release in its ConfigMap.
func strategyFor(t *testing.T, kv *v1.KubeVirt) cachedStrategy {
	t.Helper()
	cfg, err := deployid.FromKubeVirt(kv, operatorEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cm, ok := encodedStrategies.Load(cfg.ID); ok {
		return cachedStrategy{cm: cm.(*corev1.ConfigMap).DeepCopy(), cfg: cfg}
	}
	s, err := generate.Generate(generate.Input{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	cm, err := strategy.Encode(s, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	cm.Name = "kubevirt-install-strategy-" + cfg.ID[:8]
	encodedStrategies.Store(cfg.ID, cm.DeepCopy())
	return cachedStrategy{cm: cm, cfg: cfg}
}

// encodedStrategies are strategyFor's ConfigMaps by deployment ID: the
// package's tests start from the same few releases, and rendering one is
// half a second.
var encodedStrategies sync.Map

func (e *upgradeEnv) recordPatch(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := e.record(apply.RefOf(obj).Kind, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return c.Patch(ctx, obj, patch, opts...)
}

func (e *upgradeEnv) recordCreate(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
	if err := e.record(apply.RefOf(obj).Kind, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return c.Create(ctx, obj, opts...)
}

func (e *upgradeEnv) recordUpdate(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
	if err := e.record(apply.RefOf(obj).Kind, obj.GetNamespace(), obj.GetName()); err != nil {
		return err
	}
	return c.Update(ctx, obj, opts...)
}

func (e *upgradeEnv) recordApply(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	u := obj.(interface {
		GetKind() string
		GetName() string
		GetNamespace() string
	})
	if err := e.record(u.GetKind(), u.GetNamespace(), u.GetName()); err != nil {
		return err
	}
	return c.Apply(ctx, obj, opts...)
}

// record notes a write of a certificate or a webhook, or refuses one of the
// kind failWrites names.
func (e *upgradeEnv) record(kind, namespace, name string) error {
	ref := kind + " " + name
	if e.failWrites != "" && kind == e.failWrites {
		return apierrors.NewInternalError(errors.New("the API server refuses " + ref))
	}
	switch kind {
	case "Secret", "ConfigMap":
		if _, isCert := certs.ProfileFor(name, namespace); isCert || certs.IsCAName(name) {
			e.writes = append(e.writes, ref)
		}
	case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
		e.writes = append(e.writes, ref)
	}
	return nil
}

// reconcile runs a KubeVirt pass, the certificate controller's pass it
// asks for, and the KubeVirt pass that follows, as the manager would.
func (e *upgradeEnv) reconcile() (reconcile.Result, error) {
	e.t.Helper()
	req := reconcile.Request{NamespacedName: e.key}
	_, _ = e.r.Reconcile(context.Background(), req)
	if _, err := e.certs.Reconcile(context.Background(), req); err != nil {
		return reconcile.Result{}, err
	}
	return e.r.Reconcile(context.Background(), req)
}

func (e *upgradeEnv) kubevirt() *v1.KubeVirt {
	e.t.Helper()
	kv := &v1.KubeVirt{}
	if err := e.c.Get(context.Background(), e.key, kv); err != nil {
		e.t.Fatal(err)
	}
	return kv
}

// checkCertificates fails unless every certificate Secret is valid at now,
// and the operator's webhook certificate chains to the CA bundle the API
// server is given for virt-operator-validator (so the KubeVirt CR can still
// be edited and deleted through it).
func (e *upgradeEnv) checkCertificates(now time.Time) {
	e.t.Helper()
	secrets := &corev1.SecretList{}
	if err := e.c.List(context.Background(), secrets, client.InNamespace("kubevirt")); err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for i := range secrets.Items {
		sec := &secrets.Items[i]
		if sec.Type != corev1.SecretTypeTLS {
			continue
		}
		kp, err := certs.ParseSecret(sec)
		if err != nil {
			e.t.Fatalf("%s: %v", sec.Name, err)
		}
		if now.After(kp.Cert.NotAfter) || now.Before(kp.Cert.NotBefore) {
			e.t.Fatalf("at %s certificate %s is not valid (%s to %s)", now, sec.Name, kp.Cert.NotBefore, kp.Cert.NotAfter)
		}
		n++
	}
	if n < 13 {
		e.t.Fatalf("%d certificate Secrets, want every one the strategy has", n)
	}
	webhook := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Name: "virt-operator-validator"}, webhook); err != nil {
		e.t.Fatal(err)
	}
	operatorCert := &corev1.Secret{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "kubevirt", Name: certs.SecretOperator}, operatorCert); err != nil {
		e.t.Fatal(err)
	}
	kp, err := certs.ParseSecret(operatorCert)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, w := range webhook.Webhooks {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(w.ClientConfig.CABundle) {
			e.t.Fatalf("webhook %s has no CA bundle", w.Name)
		}
		name := w.ClientConfig.Service.Name + "." + w.ClientConfig.Service.Namespace + ".svc"
		if _, err := kp.Cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: name, CurrentTime: now}); err != nil {
			e.t.Fatalf("at %s the API server could not call %s: %v", now, w.Name, err)
		}
	}
}

// Whatever holds an upgrade, every certificate stays valid over 72 hours (a
// leaf lives 24 hours), the operator's own webhook certificate among them, so
// the API server can still call virt-operator-validator and the KubeVirt CR
// stays editable; and so do the certificates of a component only the running
// deployment has, while the held target drops it (review 4 F4: they were
// emptied on the first pass, or expired after a day unheld).
func TestCertificatesStayValidWhileTheUpgradeIsHeld(t *testing.T) {
	dropTemplate := func(s *v1.KubeVirtSpec) {
		s.Paused = true
		s.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{DisabledFeatureGates: []string{"Template"}}
	}
	for _, tc := range []struct {
		name      string
		from      string // the release running; v1.8.4 when empty
		spec      func(*v1.KubeVirtSpec)
		env       func(*upgradeEnv)
		wantCause string // the reason status names
		kept      string // a certificate only the running deployment has
	}{
		{name: "paused, the target without virt-template", from: "v1.9.0", spec: dropTemplate, wantCause: ReasonRolloutPaused, kept: certs.SecretTemplateWebhook},
		{name: "a paused rollback, the target without virt-handler's monitoring client", from: "v1.9.0",
			spec: func(s *v1.KubeVirtSpec) { s.Paused, s.ImageTag = true, "v1.8.4" }, wantCause: ReasonRolloutPaused, kept: certs.SecretHandlerMonitoringClient},
		{name: "an unheld rollback that never finishes", from: "v1.9.0",
			spec: func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.8.4" }, kept: certs.SecretHandlerMonitoringClient},
		{name: "paused", spec: func(s *v1.KubeVirtSpec) { s.Paused = true }, wantCause: ReasonRolloutPaused},
		{name: "outside the rollout windows", spec: func(s *v1.KubeVirtSpec) {
			s.RolloutWindows = []v1.MaintenanceWindow{{Days: []v1.Weekday{"Sunday"}, Start: "02:00", Duration: v1.Duration{Duration: time.Hour}}}
		}, wantCause: ReasonOutsideRolloutWindows},
		{name: "a failing preflight", spec: func(*v1.KubeVirtSpec) {}, env: func(e *upgradeEnv) {
			e.r.ServerVersion = func() (*version.Info, error) { return &version.Info{Major: "1", Minor: "20"}, nil }
		}, wantCause: ReasonPreflight},
		{name: "a strategy Job that never delivers", spec: func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.O" }},
		{name: "a customization that does not apply", spec: func(s *v1.KubeVirtSpec) {
			s.CustomizeComponents.Patches = []v1.CustomizeComponentsPatch{{ResourceName: "virt-api", ResourceType: "Deployment",
				Type: v1.JSONPatchType, Patch: `[{"op":"replace","path":"/spec/noSuchField/x","value":1}]`}}
		}, wantCause: ReasonInvalidCustomization},
		{name: "an invalid config", spec: func(s *v1.KubeVirtSpec) { s.SynchronizationPort = "http" }, wantCause: ReasonInvalidConfig},
		{name: "a later write failing", spec: func(*v1.KubeVirtSpec) {}, env: func(e *upgradeEnv) { e.failWrites = "CustomResourceDefinition" }, wantCause: ReasonDeploymentFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			from := tc.from
			if from == "" {
				from = "v1.8.4"
			}
			e := newUpgradeEnvFrom(t, from, tc.spec)
			if tc.kept != "" {
				if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "kubevirt", Name: tc.kept}, &corev1.Secret{}); err != nil {
					t.Fatalf("%s does not run on %s: %v", tc.kept, from, err)
				}
			}
			if tc.env != nil {
				tc.env(e)
			}
			renewed := map[string]int{}
			// A pass every 4 hours: a leaf is renewed in its last 20% (4.8 hours).
			for now := heldT0; !now.After(heldT0.Add(72 * time.Hour)); now = now.Add(4 * time.Hour) {
				e.clock.SetTime(now)
				_, _ = e.reconcile()
				e.checkCertificates(now)
				for _, w := range e.writes {
					renewed[w]++
				}
				e.writes = nil
			}
			if renewed["Secret "+certs.SecretOperator] < 3 {
				t.Fatalf("the operator's webhook certificate was written %d times in 72 hours, want at least 3 (issued, renewed, renewed)", renewed["Secret "+certs.SecretOperator])
			}
			if tc.kept != "" && renewed["Secret "+tc.kept] < 2 {
				t.Fatalf("%s, which only the running deployment has, was written %d times in 72 hours, want it renewed", tc.kept, renewed["Secret "+tc.kept])
			}
			kv := e.kubevirt()
			if kv.Status.ObservedKubeVirtVersion != from {
				t.Fatalf("the rollout went through")
			}
			held := tc.wantCause
			if h := kv.Status.RolloutHold; h != nil {
				held = h.Reason
			} else if d := findCondition(kv.Status.Conditions, v1.KubeVirtConditionDegraded); d != nil {
				held = d.Reason
			}
			if tc.wantCause != "" && held != tc.wantCause {
				t.Fatalf("status names %q, want %q", held, tc.wantCause)
			}
		})
	}
}

// A CA rotation under a hold keeps the trust order: the CA Secret, then the
// CA bundles and the webhooks carrying them, then the leaves.
func TestCARotationUnderAHoldKeepsTheTrustOrder(t *testing.T) {
	e := newUpgradeEnv(t, func(s *v1.KubeVirtSpec) {
		s.Paused = true
		s.CertificateRotateStrategy.SelfSigned = &v1.KubeVirtSelfSignConfiguration{
			CA:     &v1.CertConfig{Duration: &v1.Duration{Duration: 10 * time.Hour}},
			Server: &v1.CertConfig{Duration: &v1.Duration{Duration: 2 * time.Hour}},
		}
	})
	_, _ = e.reconcile()
	e.writes = nil
	e.clock.SetTime(heldT0.Add(8*time.Hour + 30*time.Minute)) // the CA's last 20%
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	first := func(prefix string) int {
		for i, w := range e.writes {
			if strings.HasPrefix(w, prefix) {
				return i
			}
		}
		t.Fatalf("no write of %s among %q", prefix, e.writes)
		return -1
	}
	ca, bundle, webhook := first("Secret kubevirt-ca"), first("ConfigMap kubevirt-ca"), first("ValidatingWebhookConfiguration")
	leaf := first("Secret " + certs.SecretOperator)
	if ca > bundle || bundle > webhook || webhook > leaf {
		t.Fatalf("write order %q: want the CA, its bundle, the webhooks, then the leaves", e.writes)
	}
	e.checkCertificates(e.clock.Now())
}
