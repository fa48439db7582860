package certs

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

func TestServingDecision(t *testing.T) {
	p := DefaultPolicy()
	_, ca := secretOf(t, SecretCA, nil, p, t0)
	_, otherCA := secretOf(t, SecretCA, nil, p, t0)
	fine, _ := secretOf(t, SecretAPI, ca, p, t0)
	client, _ := secretOf(t, SecretHandlerClient, ca, p, t0)
	byOther, _ := secretOf(t, SecretAPI, otherCA, p, t0)

	edit := func(s *corev1.Secret, f func(*corev1.Secret)) *corev1.Secret {
		s = s.DeepCopy()
		f(s)
		return s
	}
	reissue := func(cn string, names []string) *corev1.Secret {
		kp, err := testIssuer.NewServingCert(ca, cn, names, t0, p.Cert.Duration)
		if err != nil {
			t.Fatal(err)
		}
		s := shell(SecretAPI)
		kp.SetSecret(s, p.Cert.Duration)
		return s
	}
	apiCN := "virt-api." + testNS + ".pod.cluster.local"
	deadline := t0.Add(24*time.Hour - 4*time.Hour - 48*time.Minute)

	// A CA that expires (t0+10h) before its leaves (t0+24h).
	shortCA := Policy{CA: Lifetime{10 * time.Hour, 2 * time.Hour}, Cert: p.Cert}
	_, sca := secretOf(t, SecretCA, nil, shortCA, t0)
	underShort, _ := secretOf(t, SecretAPI, sca, shortCA, t0)

	tests := []struct {
		name   string
		secret *corev1.Secret
		ca     *KeyPair
		policy Policy
		now    time.Time
		reason string
		next   time.Time // for kept certificates
		msg    string
	}{
		{"missing", nil, ca, p, t0, ReasonMissing, time.Time{}, ""},
		{"empty shell", shell(SecretAPI), ca, p, t0, ReasonMissing, time.Time{}, ""},
		{"corrupt", edit(fine, func(s *corev1.Secret) { s.Data[TLSCertKey] = []byte("junk") }), ca, p, t0, ReasonCorrupt, time.Time{}, "PEM"},
		{"fine", fine, ca, p, t0.Add(time.Hour), ReasonValid, deadline, ""},
		{"fine client cert", client, ca, p, t0.Add(time.Hour), ReasonValid, deadline, ""},
		{"one second before the deadline", fine, ca, p, deadline.Add(-time.Second), ReasonValid, deadline, ""},
		{"expiring: at the deadline", fine, ca, p, deadline, ReasonExpiring, time.Time{}, "due for renewal since"},
		{"expired", fine, ca, p, t0.Add(48 * time.Hour), ReasonExpiring, time.Time{}, ""},
		{"signed by another CA", byOther, ca, p, t0.Add(time.Hour), ReasonWrongCA, time.Time{}, "kubevirt-ca"},
		{"DNS names of another namespace", reissue(apiCN, ServiceDNSNames(svcAPI, "other")), ca, p, t0, ReasonProfileChanged, time.Time{}, "DNS names"},
		{"a DNS name missing", reissue(apiCN, ServiceDNSNames(svcAPI, testNS)[1:]), ca, p, t0, ReasonProfileChanged, time.Time{}, "DNS names"},
		{"wrong common name", reissue("virt-api", ServiceDNSNames(svcAPI, testNS)), ca, p, t0, ReasonProfileChanged, time.Time{}, "common name"},
		{"DNS names in another order are fine", reissue(apiCN, reversed(ServiceDNSNames(svcAPI, testNS))), ca, p, t0, ReasonValid, deadline, ""},
		{"duration annotation missing", edit(fine, func(s *corev1.Secret) { delete(s.Annotations, metadata.CertificateDurationAnnotation) }), ca, p, t0, ReasonDurationChanged, time.Time{}, ""},
		{"duration annotation in another spelling is fine", edit(fine, func(s *corev1.Secret) { s.Annotations[metadata.CertificateDurationAnnotation] = "24h" }), ca, p, t0, ReasonValid, deadline, ""},
		{"policy duration changed", fine, ca, Policy{CA: p.CA, Cert: Lifetime{12 * time.Hour, time.Hour}}, t0, ReasonDurationChanged, time.Time{}, "12h0m0s"},
		{"CA expires first: due half-way through the CA's renewBefore", underShort, sca, shortCA, t0.Add(time.Hour), ReasonValid, t0.Add(9 * time.Hour), ""},
		{"CA expires first: past that point", underShort, sca, shortCA, t0.Add(9 * time.Hour), ReasonExpiring, time.Time{}, ""},
		{"no CA given: CA checks skipped", byOther, nil, p, t0.Add(time.Hour), ReasonValid, deadline, ""},
		{"not a leaf secret", shell(SecretCA), ca, p, t0, ReasonUnknownSecret, time.Time{}, "kubevirt-ca"},
		{"unknown secret", edit(fine, func(s *corev1.Secret) { s.Name = "foo" }), ca, p, t0, ReasonUnknownSecret, time.Time{}, "foo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := ServingDecision(tt.secret, tt.ca, tt.policy, tt.now)
			checkDecision(t, d, tt.reason, tt.now, tt.next, tt.msg)
		})
	}
}

func TestCADecision(t *testing.T) {
	p := DefaultPolicy()
	caSecret, ca := secretOf(t, SecretCA, nil, p, t0)
	exportSecret, _ := secretOf(t, SecretExportCA, nil, p, t0)
	leafAsCA, _ := secretOf(t, SecretAPI, ca, p, t0)
	leafAsCA.Name, leafAsCA.Namespace = SecretCA, testOpNS
	wrongCN, _ := secretOf(t, SecretExportCA, nil, p, t0)
	wrongCN.Name = SecretBackupCA
	corrupt := caSecret.DeepCopy()
	corrupt.Data[TLSPrivateKeyKey] = []byte("junk")
	caDeadline := t0.Add(168*time.Hour - 33*time.Hour - 36*time.Minute)
	auxDeadline := t0.Add(168*time.Hour - 4*time.Hour - 48*time.Minute)

	tests := []struct {
		name   string
		secret *corev1.Secret
		policy Policy
		now    time.Time
		reason string
		next   time.Time
		msg    string
	}{
		{"missing", nil, p, t0, ReasonMissing, time.Time{}, ""},
		{"empty shell", shell(SecretCA), p, t0, ReasonMissing, time.Time{}, ""},
		{"corrupt key", corrupt, p, t0, ReasonCorrupt, time.Time{}, "tls.key"},
		{"fine", caSecret, p, t0.Add(24 * time.Hour), ReasonValid, caDeadline, ""},
		{"expiring", caSecret, p, caDeadline, ReasonExpiring, time.Time{}, ""},
		{"export CA renews with the certificates' renewBefore", exportSecret, p, t0.Add(time.Hour), ReasonValid, auxDeadline, ""},
		{"a leaf certificate in the CA secret", leafAsCA, p, t0, ReasonProfileChanged, time.Time{}, "common name"},
		{"the export CA in the backup CA secret", wrongCN, p, t0, ReasonProfileChanged, time.Time{}, "backup.kubevirt.io"},
		{"CA duration changed", caSecret, Policy{CA: Lifetime{48 * time.Hour, 10 * time.Hour}, Cert: p.Cert}, t0, ReasonDurationChanged, time.Time{}, ""},
		{"not a CA secret", shell(SecretAPI), p, t0, ReasonUnknownSecret, time.Time{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkDecision(t, CADecision(tt.secret, tt.policy, tt.now), tt.reason, tt.now, tt.next, tt.msg)
		})
	}
}

func checkDecision(t *testing.T, d Decision, reason string, now, next time.Time, msg string) {
	t.Helper()
	if d.Reason != reason {
		t.Fatalf("reason %s (%s), want %s", d.Reason, d.Message, reason)
	}
	wantRotate := reason != ReasonValid && reason != ReasonUnknownSecret
	if d.Rotate != wantRotate {
		t.Errorf("Rotate = %t, want %t", d.Rotate, wantRotate)
	}
	switch {
	case d.Rotate && !d.NextCheck.Equal(now):
		t.Errorf("NextCheck %s, want now (%s) when rotating", d.NextCheck, now)
	case reason == ReasonValid && !d.NextCheck.Equal(next):
		t.Errorf("NextCheck %s, want %s", d.NextCheck, next)
	}
	if !strings.Contains(d.Message, msg) {
		t.Errorf("message %q does not contain %q", d.Message, msg)
	}
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}
