package certificates

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/controller/transient"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

type env struct {
	t      *testing.T
	c      client.WithWatch
	r      *Reconciler
	clock  *clocktesting.FakeClock
	kv     *v1.KubeVirt
	writes []string
	// fail refuses the writes of objects whose name it holds, with failErr
	// (an internal error, which is transient, when nil).
	fail    string
	failErr error
}

func newEnv(t *testing.T, objs ...client.Object) *env {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme, strategy.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{t: t, clock: clocktesting.NewFakeClock(t0)}
	e.kv = &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt", Finalizers: []string{metadata.KubeVirtFinalizer}},
		Spec: v1.KubeVirtSpec{ImageTag: "v1.9.0"}}
	e.c = fake.NewClientBuilder().WithScheme(scheme).WithObjects(append([]client.Object{e.kv}, objs...)...).WithStatusSubresource(&v1.KubeVirt{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
				if err := e.record(obj.(interface{ GetKind() string }).GetKind(), obj.(interface{ GetName() string }).GetName()); err != nil {
					return err
				}
				return c.Apply(ctx, obj, opts...)
			},
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if err := e.record(apply.RefOf(obj).Kind, obj.GetName()); err != nil {
					return err
				}
				return c.Create(ctx, obj, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if err := e.record(apply.RefOf(obj).Kind, obj.GetName()); err != nil {
					return err
				}
				return c.Update(ctx, obj, opts...)
			},
		}).Build()
	e.r = &Reconciler{Client: e.c, Namespace: "kubevirt", Clock: e.clock, Recorder: events.NewFakeRecorder(1000), Wants: NewWants()}
	return e
}

// record notes a write, or refuses one of a name fail holds.
func (e *env) record(kind, name string) error {
	if e.fail != "" && strings.Contains(name, e.fail) {
		if e.failErr != nil {
			return e.failErr
		}
		return apierrors.NewInternalError(errors.New("the API server refuses " + name))
	}
	e.writes = append(e.writes, kind+" "+name)
	return nil
}

// wanted is what the KubeVirt controller asks for a v1.9.0 install.
func wanted(t *testing.T, edit func(*v1.KubeVirtSpec)) Wanted {
	t.Helper()
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt"}, Spec: v1.KubeVirtSpec{ImageTag: "v1.9.0"}}
	if edit != nil {
		edit(&kv.Spec)
	}
	cfg, err := deployid.FromKubeVirt(kv, deployid.MapEnv{deployid.EnvVirtOperatorImage: "quay.io/kubevirt/virt-operator:v1.9.0"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := generate.Generate(generate.Input{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	shells := &strategy.Strategy{}
	for _, sec := range s.Secrets {
		if certs.IsCertificateObject("Secret", sec.Name, sec.Namespace) {
			shells.Secrets = append(shells.Secrets, sec)
		}
	}
	for _, cm := range s.ConfigMaps {
		if certs.IsCertificateObject("ConfigMap", cm.Name, cm.Namespace) {
			shells.ConfigMaps = append(shells.ConfigMaps, cm)
		}
	}
	apply.Desired(shells, cfg)
	return Wanted{Secrets: shells.Secrets, ConfigMaps: shells.ConfigMaps}
}

func (e *env) reconcile() (reconcile.Result, error) {
	e.t.Helper()
	e.writes = nil
	return e.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(e.kv)})
}

func (e *env) secret(name string) (*corev1.Secret, bool) {
	e.t.Helper()
	s := &corev1.Secret{}
	err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "kubevirt", Name: name}, s)
	if client.IgnoreNotFound(err) != nil {
		e.t.Fatal(err)
	}
	return s, err == nil
}

func (e *env) status() *v1.CertificatesStatus {
	e.t.Helper()
	kv := &v1.KubeVirt{}
	if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(e.kv), kv); err != nil {
		e.t.Fatal(err)
	}
	return kv.Status.Certificates
}

// validAt fails unless every certificate Secret is valid at now.
func (e *env) validAt(now time.Time) int {
	e.t.Helper()
	list := &corev1.SecretList{}
	if err := e.c.List(context.Background(), list, client.InNamespace("kubevirt")); err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for i := range list.Items {
		kp, err := certs.ParseSecret(&list.Items[i])
		if err != nil {
			e.t.Fatalf("%s: %v", list.Items[i].Name, err)
		}
		if now.Before(kp.Cert.NotBefore) || !now.Before(kp.Cert.NotAfter) {
			e.t.Fatalf("at %s %s is not valid (%s to %s)", now, list.Items[i].Name, kp.Cert.NotBefore, kp.Cert.NotAfter)
		}
		n++
	}
	return n
}

// What is wanted is issued, in trust order, status says when to look again,
// and a pass at rest writes nothing.
func TestIssuesWhatIsWantedInTrustOrder(t *testing.T) {
	e := newEnv(t)
	e.r.Wants.Set(e.kv, wanted(t, nil))
	res, err := e.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	n := e.validAt(t0)
	if n < 13 {
		t.Fatalf("%d certificates issued, want every one v1.9.0 has", n)
	}
	order := strings.Join(e.writes, "; ")
	if ca, bundle, leaf := strings.Index(order, "Secret kubevirt-ca"), strings.Index(order, "ConfigMap kubevirt-ca"), strings.Index(order, "Secret "+certs.SecretOperator); ca > bundle || bundle > leaf {
		t.Fatalf("writes %s: want the CA, its bundle, then the leaves", order)
	}
	st := e.status()
	if st == nil || st.NextCheck == nil || st.Reason != "" || res.RequeueAfter <= 0 || res.RequeueAfter > st.NextCheck.Sub(t0)+time.Second {
		t.Fatalf("status %+v, requeue %v: want the next check recorded and asked for", st, res.RequeueAfter)
	}
	if _, err := e.reconcile(); err != nil || len(e.writes) != 0 {
		t.Fatalf("a pass at rest wrote %q (%v)", e.writes, err)
	}
}

// A certificate nobody wants any more, but that exists (its component still
// runs), is renewed like any other; only its component's deletion takes it.
func TestRenewsWhatRunsWhenNothingWantsIt(t *testing.T) {
	e := newEnv(t)
	e.r.Wants.Set(e.kv, wanted(t, nil))
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	e.r.Wants.Set(e.kv, wanted(t, func(s *v1.KubeVirtSpec) {
		s.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{DisabledFeatureGates: []string{"Template"}}
	}))
	for now := t0; !now.After(t0.Add(72 * time.Hour)); now = now.Add(4 * time.Hour) {
		e.clock.SetTime(now)
		if _, err := e.reconcile(); err != nil {
			t.Fatal(err)
		}
		e.validAt(now)
	}
	if _, ok := e.secret(certs.SecretTemplateWebhook); !ok {
		t.Fatal("a certificate of a component that still runs was deleted")
	}
}

// While the KubeVirt CR is being deleted nothing is created, and a
// certificate deleted since the cache read it is not brought back.
func TestNothingComesBackDuringAnUninstall(t *testing.T) {
	e := newEnv(t)
	e.r.Wants.Set(e.kv, wanted(t, nil))
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	kv := &v1.KubeVirt{}
	if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(e.kv), kv); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(context.Background(), kv); err != nil { // the finalizer keeps it, deleting
		t.Fatal(err)
	}
	stale, _ := e.secret(certs.SecretAPI)
	if err := e.c.Delete(context.Background(), stale.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	// A cache that still shows the deleted Secret, now due.
	e.r.Client = interceptor.NewClient(e.c, interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if err := c.List(ctx, list, opts...); err != nil {
			return err
		}
		if secrets, ok := list.(*corev1.SecretList); ok {
			secrets.Items = append(secrets.Items, *stale)
		}
		return nil
	}})
	e.clock.SetTime(t0.Add(23 * time.Hour))
	_, _ = e.reconcile()
	if _, ok := e.secret(certs.SecretAPI); ok {
		t.Fatal("a certificate deleted by the uninstall was written again")
	}
	e.r.Client = e.c
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.secret(certs.SecretAPI); ok {
		t.Fatal("a certificate was created while the KubeVirt CR is being deleted")
	}
}

// A failure to write is in status.certificates and a Warning, and goes when
// a pass succeeds: a refusal at once, a transient error (a restarting API
// server) only once such errors have lasted transient.Grace.
func TestAFailureIsInStatusUntilItClears(t *testing.T) {
	e := newEnv(t)
	e.r.Wants.Set(e.kv, wanted(t, nil))
	e.fail = certs.SecretOperator
	if _, err := e.reconcile(); err == nil {
		t.Fatal("a refused write was not an error to retry")
	}
	if st := e.status(); st != nil && st.Reason != "" {
		t.Fatalf("status %+v after a transient error within its grace, want nothing said", st)
	}
	e.clock.Step(transient.Grace)
	if _, err := e.reconcile(); err == nil {
		t.Fatal("a refused write was not an error to retry")
	}
	if st := e.status(); st == nil || st.Reason != ReasonFailed || !strings.Contains(st.Message, certs.SecretOperator) {
		t.Fatalf("status %+v once the errors lasted, want %s naming the Secret", st, ReasonFailed)
	}
	e.fail = ""
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	if st := e.status(); st == nil || st.Reason != "" || st.Message != "" {
		t.Fatalf("status %+v after a clean pass, want no problem", st)
	}
	e.fail, e.failErr = certs.SecretOperator, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, certs.SecretOperator, errors.New("no"))
	e.clock.Step(25 * time.Hour) // a certificate due again
	if _, err := e.reconcile(); err == nil {
		t.Fatal("a refused write was not an error to retry")
	}
	if st := e.status(); st == nil || st.Reason != ReasonFailed {
		t.Fatalf("status %+v after a refusal, want %s at once", st, ReasonFailed)
	}
}

// The CA bundle goes into every managed webhook served by a Service, and
// nowhere else.
func TestInjectsTheCABundle(t *testing.T) {
	managed := map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}
	webhook := func(name string, labels map[string]string) *admissionregistrationv1.ValidatingWebhookConfiguration {
		return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: name + ".kubevirt.io",
				ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "kubevirt", Name: "virt-api"}}}}}
	}
	ours, theirs := webhook("virt-api-validator", managed), webhook("someone-elses", nil)
	e := newEnv(t, ours, theirs)
	e.r.Wants.Set(e.kv, wanted(t, nil))
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := e.c.Get(context.Background(), types.NamespacedName{Name: ours.Name}, got); err != nil {
		t.Fatal(err)
	}
	bundle := &corev1.ConfigMap{}
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "kubevirt", Name: certs.SecretCA}, bundle); err != nil {
		t.Fatal(err)
	}
	if string(got.Webhooks[0].ClientConfig.CABundle) != bundle.Data[certs.CABundleKey] {
		t.Fatal("the managed webhook does not carry the CA bundle")
	}
	if err := e.c.Get(context.Background(), types.NamespacedName{Name: theirs.Name}, got); err != nil || len(got.Webhooks[0].ClientConfig.CABundle) != 0 {
		t.Fatalf("a webhook the operator does not manage got the bundle (%v)", err)
	}
}

// A configuration that gains a webhook (an upgrade adds them) gets the bundle
// in all of them: the bundle's apply names every webhook served by a
// Service, since server-side apply drops a field from the apply that owned
// it once the next apply leaves it out. (Applying only the new webhooks
// cleared the others', and each pass then flipped the two sets: a write
// loop at rest after every upgrade.)
func TestInjectsTheCABundleIntoANewWebhook(t *testing.T) {
	managed := map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}
	service := admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "kubevirt", Name: "virt-api"}}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "virt-api-validator", Labels: managed},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "a.kubevirt.io", ClientConfig: service}}}
	e := newEnv(t, cfg)
	e.r.Wants.Set(e.kv, wanted(t, nil))
	if _, err := e.reconcile(); err != nil {
		t.Fatal(err)
	}
	got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := e.c.Get(context.Background(), types.NamespacedName{Name: cfg.Name}, got); err != nil {
		t.Fatal(err)
	}
	got.Webhooks = append(got.Webhooks, admissionregistrationv1.ValidatingWebhook{Name: "b.kubevirt.io", ClientConfig: service})
	if err := e.c.Update(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	for pass := range 3 {
		if _, err := e.reconcile(); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Get(context.Background(), types.NamespacedName{Name: cfg.Name}, got); err != nil {
			t.Fatal(err)
		}
		for _, wh := range got.Webhooks {
			if len(wh.ClientConfig.CABundle) == 0 {
				t.Fatalf("pass %d: webhook %s has no CA bundle", pass+1, wh.Name)
			}
		}
	}
}
