package certs

import (
	"bytes"
	"crypto"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

func names[T interface{ GetName() string }](objs []T) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

func TestFillFromScratch(t *testing.T) {
	s := testStrategy()
	before := testStrategy()
	r := mustFill(t, s, Inputs{Policy: DefaultPolicy(), Now: t0, Issuer: testIssuer})
	if !equality.Semantic.DeepEqual(s, before) {
		t.Error("Fill modified the strategy")
	}
	if len(r.Secrets) != 14 || len(r.Decisions) != 14 {
		t.Fatalf("%d secrets, %d decisions, want 14", len(r.Secrets), len(r.Decisions))
	}
	if got := names(r.Secrets[:3]); !slices.Equal(got, []string{SecretCA, SecretExportCA, SecretBackupCA}) {
		t.Errorf("CAs first, got %v", got)
	}
	if got := names(r.ConfigMaps); !slices.Equal(got, []string{SecretCA, ConfigMapExternalCA, SecretBackupCA, SecretExportCA}) {
		t.Errorf("ConfigMaps %v: want kubevirt-ca, then the external reset, then the others, each once", got)
	}
	ca, err := ParseSecret(r.Secrets[0])
	if err != nil {
		t.Fatal(err)
	}
	for i, sec := range r.Secrets {
		if d := r.Decisions[i]; d.Reason != ReasonMissing || d.Secret != key(sec.Namespace, sec.Name) {
			t.Errorf("decision %d: %+v", i, d)
		}
		kp, err := ParseSecret(sec)
		if err != nil {
			t.Fatalf("%s: %v", sec.Name, err)
		}
		if sec.Labels["app.kubernetes.io/managed-by"] != "virt-operator" || sec.Annotations[metadata.CertificateDurationAnnotation] == "" {
			t.Errorf("%s: metadata %v %v", sec.Name, sec.Labels, sec.Annotations)
		}
		prof, _ := ProfileFor(sec.Name, sec.Namespace)
		if prof.CA == SecretCA && kp.Cert.CheckSignatureFrom(ca.Cert) != nil {
			t.Errorf("%s is not signed by kubevirt-ca", sec.Name)
		}
	}
	if want := ca.CertPEM; !bytes.Equal(r.CABundle, want) || r.ConfigMaps[0].Data[CABundleKey] != string(want) {
		t.Error("kubevirt-ca bundle must be exactly the new CA")
	}
	if r.ConfigMaps[1].Data[CABundleKey] != "" {
		t.Error("the external CA ConfigMap must be an empty bundle")
	}
	// Leaves (24h, renewed 4.8h before) come due first.
	if want := t0.Add(24*time.Hour - 4*time.Hour - 48*time.Minute); !r.NextCheck.Equal(want) {
		t.Errorf("NextCheck %s, want %s", r.NextCheck, want)
	}
}

// TestFillIsIdempotent: with the result written back and nothing changed, a
// second Fill (even later, before any deadline) returns deep-equal objects, so
// the apply engine has nothing to write.
func TestFillIsIdempotent(t *testing.T) {
	s := testStrategy()
	r1 := mustFill(t, s, Inputs{Policy: DefaultPolicy(), Now: t0, Issuer: testIssuer})
	secrets, cms := liveFrom(r1)
	for _, now := range []time.Time{t0, t0.Add(time.Hour), r1.NextCheck.Add(-time.Second)} {
		r2 := mustFill(t, s, Inputs{Secrets: secrets, ConfigMaps: cms, Policy: DefaultPolicy(), Now: now, Issuer: testIssuer})
		if !reflect.DeepEqual(r1.Secrets, r2.Secrets) || !reflect.DeepEqual(r1.ConfigMaps, r2.ConfigMaps) ||
			!bytes.Equal(r1.CABundle, r2.CABundle) || !r1.NextCheck.Equal(r2.NextCheck) {
			t.Errorf("at %s: second Fill differs from the first", now)
		}
		for _, d := range r2.Decisions {
			if d.Rotate {
				t.Errorf("at %s: %s rotated: %s", now, d.Secret, d.Reason)
			}
		}
	}
}

// step fills at now from the live state and writes the result back.
func step(t *testing.T, live *Inputs, now time.Time) *Result {
	t.Helper()
	live.Now = now
	r := mustFill(t, testStrategy(), *live)
	live.Secrets, live.ConfigMaps = liveFrom(r)
	return r
}

func rotated(r *Result) []string {
	var out []string
	for _, d := range r.Decisions {
		if d.Rotate {
			out = append(out, d.Secret.Name+":"+d.Reason)
		}
	}
	return out
}

func TestFillRotation(t *testing.T) {
	live := &Inputs{Policy: DefaultPolicy(), Issuer: testIssuer}
	r := step(t, live, t0)
	oldCA := must(ParseSecret(r.Secrets[0]))

	// At the leaves' deadline only the leaves are reissued.
	r = step(t, live, r.NextCheck)
	if got := rotated(r); len(got) != 11 || !strings.HasSuffix(got[0], ":"+ReasonExpiring) {
		t.Errorf("at the leaf deadline rotated %v, want the 11 leaves", got)
	}
	// At the CA deadline kubevirt-ca is reissued, every leaf follows
	// (signed by another CA), and the bundle trusts both CAs.
	caDue := oldCA.Cert.NotAfter.Add(-live.Policy.CA.RenewBefore)
	for now := r.NextCheck; now.Before(caDue); now = r.NextCheck {
		r = step(t, live, now)
	}
	r = step(t, live, caDue)
	got := rotated(r)
	if len(got) != 12 || got[0] != SecretCA+":"+ReasonExpiring || got[1] != SecretAPI+":"+ReasonWrongCA {
		t.Errorf("at the CA deadline rotated %v", got)
	}
	newCA := must(ParseSecret(r.Secrets[0]))
	certs, _ := ParseBundle(r.CABundle)
	if len(certs) != 2 || !certs[0].Equal(newCA.Cert) || !certs[1].Equal(oldCA.Cert) {
		t.Fatalf("bundle after rotation has %d certificates, want the new CA then the old one", len(certs))
	}
	// The old CA stays until it expires; NextCheck wakes the controller then.
	for now := r.NextCheck; now.Before(oldCA.Cert.NotAfter); now = r.NextCheck {
		r = step(t, live, now)
		if certs, _ := ParseBundle(r.CABundle); len(certs) != 2 {
			t.Fatalf("at %s the bundle lost the old CA early", now)
		}
	}
	if !r.NextCheck.Equal(oldCA.Cert.NotAfter) {
		t.Errorf("NextCheck %s, want the old CA's expiry %s", r.NextCheck, oldCA.Cert.NotAfter)
	}
	r = step(t, live, oldCA.Cert.NotAfter)
	if certs, _ := ParseBundle(r.CABundle); len(certs) != 1 || !certs[0].Equal(newCA.Cert) {
		t.Errorf("after the old CA expired the bundle has %d certificates, want only the new CA", len(certs))
	}
}

func TestFillMergesExternalCA(t *testing.T) {
	live := &Inputs{Policy: DefaultPolicy(), Issuer: testIssuer}
	step(t, live, t0)
	ext := newCA(t, "external", t0, 1000*time.Hour)
	live.ConfigMaps[key(testOpNS, ConfigMapExternalCA)].Data[CABundleKey] = string(ext.CertPEM)
	r := step(t, live, t0.Add(time.Minute))
	if got := subjects(t, r.CABundle); !slices.Equal(got, []string{caCommonName("kubevirt.io", t0), "external"}) {
		t.Errorf("bundle %v, want kubevirt.io then external", got)
	}
	// Once the external ConfigMap is reset the certificate stays in the bundle.
	r = step(t, live, t0.Add(2*time.Minute))
	if got := subjects(t, r.CABundle); len(got) != 2 || live.ConfigMaps[key(testOpNS, ConfigMapExternalCA)].Data[CABundleKey] != "" {
		t.Errorf("after the reset: bundle %v", got)
	}
}

func TestFillRecoversCorruptAndLostState(t *testing.T) {
	live := &Inputs{Policy: DefaultPolicy(), Issuer: testIssuer}
	r := step(t, live, t0)
	oldCA := must(ParseSecret(r.Secrets[0]))
	// The kubevirt-ca Secret is deleted and its ConfigMap garbled: the new CA
	// is issued and the replaced one is still trusted.
	delete(live.Secrets, key(testOpNS, SecretCA))
	live.ConfigMaps[key(testOpNS, SecretCA)].Data[CABundleKey] = "garbage"
	live.Secrets[key(testNS, SecretController)].Data[TLSCertKey] = []byte("garbage")
	r = step(t, live, t0.Add(time.Hour))
	if got := rotated(r); len(got) != 12 || got[0] != SecretCA+":"+ReasonMissing {
		t.Errorf("rotated %v", got)
	}
	// Nothing live holds the old CA any more, so the bundle cannot keep it.
	if certs, _ := ParseBundle(r.CABundle); len(certs) != 1 || certs[0].Equal(oldCA.Cert) {
		t.Errorf("bundle has %d certificates", len(certs))
	}
}

func TestFillErrors(t *testing.T) {
	bad := testStrategy()
	bad.Secrets = append(bad.Secrets, shell("kubevirt-unknown-certs"))
	noCA := testStrategy()
	noCA.Secrets = noCA.Secrets[1:]
	opaque := testStrategy()
	opaque.Secrets = append(opaque.Secrets, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Type: corev1.SecretTypeOpaque})
	failing := Issuer{Key: func() (crypto.Signer, error) { return nil, errors.New("no entropy") }}
	invalid := DefaultPolicy()
	invalid.Cert.RenewBefore = invalid.Cert.Duration

	for name, tc := range map[string]struct {
		s    *strategy.Strategy
		in   Inputs
		want string
	}{
		"unknown TLS secret":   {bad, Inputs{Policy: DefaultPolicy(), Issuer: testIssuer}, "kubevirt-unknown-certs: the operator has no profile"},
		"leaf without its CA":  {noCA, Inputs{Policy: DefaultPolicy(), Issuer: testIssuer}, "its CA kubevirt-ca is not in the strategy"},
		"key generation fails": {testStrategy(), Inputs{Policy: DefaultPolicy(), Issuer: failing}, "no entropy"},
		"invalid policy":       {testStrategy(), Inputs{Policy: invalid, Issuer: testIssuer}, "server.renewBefore"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Fill(tc.s, tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	if r := mustFill(t, opaque, Inputs{Policy: DefaultPolicy(), Now: t0, Issuer: testIssuer}); len(r.Secrets) != 14 {
		t.Errorf("a non-TLS secret must be left out, got %d secrets", len(r.Secrets))
	}
}

func TestInjectCABundle(t *testing.T) {
	s := testStrategy()
	bundle := newCA(t, "x", t0, time.Hour).CertPEM
	InjectCABundle(s, bundle)
	n := 0
	check := func(what string, got []byte) {
		n++
		if !bytes.Equal(got, bundle) {
			t.Errorf("%s: caBundle not set", what)
		}
	}
	for _, c := range s.ValidatingWebhookConfigurations {
		for _, w := range c.Webhooks {
			check(c.Name+"/"+w.Name, w.ClientConfig.CABundle)
		}
	}
	for _, c := range s.MutatingWebhookConfigurations {
		for _, w := range c.Webhooks {
			check(c.Name+"/"+w.Name, w.ClientConfig.CABundle)
		}
	}
	for _, a := range s.APIServices {
		check(a.Name, a.Spec.CABundle)
	}
	if n != 7 {
		t.Errorf("checked %d caBundles, want 7", n)
	}
	bundle[0] = 'X' // the strategy holds its own copies
	if bytes.Equal(s.APIServices[0].Spec.CABundle, bundle) {
		t.Error("InjectCABundle must copy the bundle")
	}
}

func BenchmarkFillDefault(b *testing.B) {
	s := testStrategy()
	for b.Loop() {
		if _, err := Fill(s, Inputs{Policy: DefaultPolicy(), Now: t0}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFillSteadyState is the cost of a reconcile at rest: 14 Secrets
// parsed and checked, nothing issued.
func BenchmarkFillSteadyState(b *testing.B) {
	s := testStrategy()
	r := mustFill(b, s, Inputs{Policy: DefaultPolicy(), Now: t0})
	secrets, cms := liveFrom(r)
	in := Inputs{Secrets: secrets, ConfigMaps: cms, Policy: DefaultPolicy(), Now: t0.Add(time.Hour)}
	for b.Loop() {
		if _, err := Fill(s, in); err != nil {
			b.Fatal(err)
		}
	}
}
