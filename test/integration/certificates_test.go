package integration

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/controller/certificates"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// The CA bundle the certificate controller injects by server-side apply stays
// in every webhook of a configuration when one of them goes stale: a write
// naming only the stale one would remove it from the others (the manager owned
// it there and no longer applies it), and the two would take turns for ever.
func TestCABundleStaysInEveryWebhook(t *testing.T) {
	ctx := context.Background()
	ns, kv := certificatesNamespace(t)
	hook := func(name string) admissionregistrationv1.ValidatingWebhook { return serviceWebhook(ns, name) }
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "bundle-test-" + ns,
		Labels: map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{hook("a.kubevirt.io"), hook("b.kubevirt.io")}}
	if err := k8s.Create(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), vwc) })

	pass := certificatePass(t, ns, kv)
	bundles := func() (string, string) {
		t.Helper()
		got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(vwc), got); err != nil {
			t.Fatal(err)
		}
		return string(got.Webhooks[0].ClientConfig.CABundle), string(got.Webhooks[1].ClientConfig.CABundle)
	}
	pass()
	a, b := bundles()
	if a == "" || a != b {
		t.Fatal("the bundle was not injected into both webhooks")
	}
	// Someone empties b's bundle: the next pass restores it, and a keeps its.
	got := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(vwc), got); err != nil {
		t.Fatal(err)
	}
	got.Webhooks[1].ClientConfig.CABundle = nil
	if err := k8s.Update(ctx, got, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	pass()
	if a2, b2 := bundles(); a2 != a || b2 != a {
		t.Fatalf("after restoring b: a has %d bytes, b %d, want both the bundle (%d)", len(a2), len(b2), len(a))
	}
	generation := got.Generation
	for range 3 {
		pass()
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(vwc), got); err != nil || got.Generation != generation+1 {
		t.Fatalf("generation %d after passes at rest (was %d before the restore): the webhooks are rewritten (%v)", got.Generation, generation, err)
	}
}

// A rollback to a release with one webhook fewer writes the configuration
// without it: server-side apply alone would keep the webhook the certificate
// controller's caBundle is in, as a name and a bundle the API server refuses
// (v1.9.0 -> v1.8.4, virt-api-validator's 23rd webhook). The applier replaces
// the configuration instead; the webhook it keeps keeps its bundle.
func TestWebhookLeftOutByARollbackGoes(t *testing.T) {
	ctx := context.Background()
	ns, kv := certificatesNamespace(t)
	hook := func(name string) admissionregistrationv1.ValidatingWebhook { return serviceWebhook(ns, name) }
	config := func(hooks ...string) *admissionregistrationv1.ValidatingWebhookConfiguration {
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "rollback-test-" + ns,
			Labels: map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}}}
		for _, h := range hooks {
			c.Webhooks = append(c.Webhooks, hook(h))
		}
		return c
	}
	ap := &apply.Applier{Client: k8s}
	if _, err := ap.ServerSideApply(ctx, config("a.kubevirt.io", "b.kubevirt.io")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), config()) })
	pass := certificatePass(t, ns, kv)
	pass()
	live := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(config()), live); err != nil {
		t.Fatal(err)
	}
	bundle := string(live.Webhooks[0].ClientConfig.CABundle)
	if bundle == "" || len(live.Webhooks) != 2 {
		t.Fatalf("before the rollback: %d webhooks, a bundle of %d bytes", len(live.Webhooks), len(bundle))
	}

	// A copy read before someone else's write (a rotated bundle) is a
	// conflict, never a write of what it read.
	edited := live.DeepCopy()
	edited.Labels["edited"] = "true"
	if err := k8s.Update(ctx, edited, client.FieldOwner("kubectl-edit")); err != nil {
		t.Fatal(err)
	}
	if _, err := ap.Apply(ctx, []apply.Action{{Op: apply.OpUpdate, Object: config("a.kubevirt.io"), Live: live}}); !apierrors.IsConflict(err) {
		t.Fatalf("the write from a stale copy: %v, want a conflict", err)
	}
	if _, err := ap.Apply(ctx, []apply.Action{{Op: apply.OpUpdate, Object: config("a.kubevirt.io"), Live: edited}}); err != nil {
		t.Fatalf("the write without b: %v", err)
	}
	after := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(config()), after); err != nil {
		t.Fatal(err)
	}
	if after.Labels["edited"] != "true" {
		t.Errorf("the replacement dropped a label someone else added: %v", after.Labels)
	}
	if len(after.Webhooks) != 1 || after.Webhooks[0].Name != "a.kubevirt.io" || string(after.Webhooks[0].ClientConfig.CABundle) != bundle {
		t.Fatalf("after the rollback: %d webhooks (want a alone, with its bundle): %+v", len(after.Webhooks), after.Webhooks)
	}
	// The bundle is still the certificate controller's: its passes and the
	// applier's next server-side apply leave the configuration as it is.
	pass()
	if _, err := ap.ServerSideApply(ctx, config("a.kubevirt.io")); err != nil {
		t.Fatal(err)
	}
	pass()
	final := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(config()), final); err != nil {
		t.Fatal(err)
	}
	if len(final.Webhooks) != 1 || string(final.Webhooks[0].ClientConfig.CABundle) != bundle || final.Generation != after.Generation {
		t.Fatalf("at rest: %d webhooks, generation %d (was %d), bundle kept %v", len(final.Webhooks), final.Generation, after.Generation,
			string(final.Webhooks[0].ClientConfig.CABundle) == bundle)
	}
}

// certificatesNamespace is a fresh namespace holding a KubeVirt CR.
func certificatesNamespace(t *testing.T) (string, *v1.KubeVirt) {
	ctx := context.Background()
	ns := createNamespace(t, ctx, "certs")
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubevirt"}, Spec: v1.KubeVirtSpec{ImageTag: "v1.9.0"}}
	if err := k8s.Create(ctx, kv); err != nil {
		t.Fatal(err)
	}
	return ns, kv
}

// serviceWebhook is a webhook served by virt-api's Service in ns, without a
// caBundle (the certificate controller writes it).
func serviceWebhook(ns, name string) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{Name: name, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "virt-api"}}}
}

// certificatePass returns one reconcile of a certificate controller that
// wants the CA and virt-api's Secrets for kv.
func certificatePass(t *testing.T, ns string, kv *v1.KubeVirt) func() {
	wants := certificates.NewWants()
	shells := &strategy.Strategy{}
	for _, name := range []string{certs.SecretCA, certs.SecretAPI} {
		shells.Secrets = append(shells.Secrets, certSecretShell(ns, name))
	}
	shells.ConfigMaps = append(shells.ConfigMaps, caBundleShell(ns, certs.SecretCA))
	wants.Set(kv, certificates.Wanted{Secrets: shells.Secrets, ConfigMaps: shells.ConfigMaps})
	r := &certificates.Reconciler{Client: k8s, Namespace: ns, Clock: clocktesting.NewFakePassiveClock(time.Now()), Wants: wants}
	return func() {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(kv)}); err != nil {
			t.Fatal(err)
		}
	}
}

// certSecretShell is a certificate Secret as a strategy holds it: no data.
func certSecretShell(ns, name string) *corev1.Secret {
	return &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}},
		Type:       corev1.SecretTypeTLS}
}

// caBundleShell is a CA bundle ConfigMap as a strategy holds it.
func caBundleShell(ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}}}
}
