package certs

import (
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

func TestIssue(t *testing.T) {
	ca, err := testIssuer.NewCA("kubevirt.io", t0, 10*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.IsCA || ca.Cert.Subject.CommonName != "kubevirt.io" || ca.Cert.CheckSignatureFrom(ca.Cert) != nil {
		t.Errorf("CA: IsCA %t CN %q, want a self-signed CA", ca.Cert.IsCA, ca.Cert.Subject.CommonName)
	}
	if !ca.Cert.NotAfter.Equal(t0.Add(10*time.Hour)) || !ca.Cert.NotBefore.Before(t0) {
		t.Errorf("CA validity %s – %s, want backdated start and end at now+10h", ca.Cert.NotBefore, ca.Cert.NotAfter)
	}
	names := ServiceDNSNames("virt-api", testNS)
	srv, err := testIssuer.NewServingCert(ca, "virt-api.kubevirt.pod.cluster.local", names, t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if _, err := srv.Cert.Verify(x509.VerifyOptions{DNSName: "virt-api.kubevirt.svc", Roots: roots, CurrentTime: t0}); err != nil {
		t.Errorf("serving cert does not verify for virt-api.kubevirt.svc: %v", err)
	}
	cli, err := testIssuer.NewClientCert(ca, "kubevirt.io:system:client:virt-handler", t0, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: t0, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client cert does not verify for client auth: %v", err)
	}
	if _, err := cli.Cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: t0}); err == nil {
		t.Error("a client certificate must not verify as a server certificate")
	}
	if _, err := testIssuer.NewCA("x", t0, 0); err == nil {
		t.Error("zero duration: want an error")
	}
	boom := Issuer{Key: func() (crypto.Signer, error) { return nil, errors.New("boom") }}
	if _, err := boom.NewCA("x", t0, time.Hour); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("failing KeyGen: got %v", err)
	}
	// The package-level helpers use the default ECDSA P-256 generator.
	if def, err := NewCA("kubevirt.io", t0, time.Hour); err != nil || def.Cert.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("NewCA: %v, algorithm %v", err, def.Cert.PublicKeyAlgorithm)
	}
}

// Upstream's CAs and duration annotations are kept, so a take-over reissues
// nothing; this operator's earlier plain form is read too.
func TestUpstreamCertificatesAreAdopted(t *testing.T) {
	p := DefaultPolicy()
	prof, _ := ProfileFor(SecretCA, "kubevirt")
	for _, cn := range []string{"kubevirt.io@1764892800", "kubevirt.io"} {
		if why := prof.mismatch(&x509.Certificate{Subject: pkix.Name{CommonName: cn}, IsCA: true}); why != "" {
			t.Errorf("CA %q: %s", cn, why)
		}
	}
	for _, cn := range []string{"kubevirt.io@", "kubevirt.io@x", "kubevirt.io.evil", "export.kubevirt.io@1"} {
		if why := prof.mismatch(&x509.Certificate{Subject: pkix.Name{CommonName: cn}, IsCA: true}); why == "" {
			t.Errorf("CA %q accepted", cn)
		}
	}
	for _, a := range []string{"&Duration{Duration:168h0m0s,}", "168h0m0s"} {
		if !sameDuration(a, p.CA.Duration) {
			t.Errorf("annotation %q does not read as 168h", a)
		}
	}
	if sameDuration("&Duration{Duration:24h0m0s,}", p.CA.Duration) {
		t.Error("24h read as 168h")
	}
}

func TestSecretRoundTrip(t *testing.T) {
	p := DefaultPolicy()
	caSecret, ca := secretOf(t, SecretCA, nil, p, t0)
	if caSecret.Annotations[metadata.CertificateDurationAnnotation] != "&Duration{Duration:168h0m0s,}" || caSecret.Type != corev1.SecretTypeTLS {
		t.Errorf("annotations %v type %s", caSecret.Annotations, caSecret.Type)
	}
	got, err := ParseSecret(caSecret)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Cert.Equal(ca.Cert) || !slices.Equal(got.KeyPEM, ca.KeyPEM) {
		t.Error("round trip changed the key pair")
	}
}

func TestParseSecretErrors(t *testing.T) {
	good, _ := secretOf(t, SecretCA, nil, DefaultPolicy(), t0)
	other, _ := secretOf(t, SecretCA, nil, DefaultPolicy(), t0)
	with := func(crt, key []byte) *corev1.Secret {
		s := good.DeepCopy()
		s.Data = map[string][]byte{TLSCertKey: crt, TLSPrivateKeyKey: key}
		return s
	}
	crt, key := good.Data[TLSCertKey], good.Data[TLSPrivateKeyKey]
	tests := []struct {
		name   string
		secret *corev1.Secret
		noData bool
		want   string
	}{
		{"nil secret", nil, true, "no certificate data"},
		{"empty shell", shell(SecretCA), true, "kubevirt-op/kubevirt-ca: no certificate data"},
		{"no tls.crt", with(nil, key), false, "tls.crt is empty"},
		{"no tls.key", with(crt, nil), false, "tls.key is empty"},
		{"tls.crt not PEM", with([]byte("hello"), key), false, "tls.crt does not start with a PEM CERTIFICATE block"},
		{"tls.crt truncated", with(crt[:len(crt)/2], key), false, "kubevirt-op/kubevirt-ca"},
		{"tls.key garbage", with(crt, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")), false, "kubevirt-op/kubevirt-ca"},
		{"key of another certificate", with(crt, other.Data[TLSPrivateKeyKey]), false, "private key does not match public key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSecret(tt.secret)
			if err == nil {
				t.Fatal("want an error")
			}
			if errors.Is(err, ErrNoData) != tt.noData {
				t.Errorf("errors.Is(ErrNoData) = %t, want %t", !tt.noData, tt.noData)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}
