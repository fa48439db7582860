package certs

import (
	"strings"
	"testing"
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func dur(d time.Duration) *v1.Duration { return &v1.Duration{Duration: d} }

func selfSigned(ca, server *v1.CertConfig) v1.KubeVirtCertificateRotateStrategy {
	return v1.KubeVirtCertificateRotateStrategy{SelfSigned: &v1.KubeVirtSelfSignConfiguration{CA: ca, Server: server}}
}

func TestPolicyDefaults(t *testing.T) {
	h := time.Hour
	tests := []struct {
		name     string
		in       v1.KubeVirtCertificateRotateStrategy
		ca, cert Lifetime
	}{
		{"empty strategy", v1.KubeVirtCertificateRotateStrategy{}, Lifetime{168 * h, 33*h + 36*time.Minute}, Lifetime{24 * h, 4*h + 48*time.Minute}},
		{"empty selfSigned", selfSigned(nil, nil), Lifetime{168 * h, 33*h + 36*time.Minute}, Lifetime{24 * h, 4*h + 48*time.Minute}},
		{"CA duration only: renewBefore is 20% of it", selfSigned(&v1.CertConfig{Duration: dur(10 * h)}, nil),
			Lifetime{10 * h, 2 * h}, Lifetime{24 * h, 4*h + 48*time.Minute}},
		{"server renewBefore only", selfSigned(nil, &v1.CertConfig{RenewBefore: dur(h)}),
			Lifetime{168 * h, 33*h + 36*time.Minute}, Lifetime{24 * h, h}},
		{"both set", selfSigned(&v1.CertConfig{Duration: dur(48 * h), RenewBefore: dur(24 * h)}, &v1.CertConfig{Duration: dur(2 * h), RenewBefore: dur(30 * time.Minute)}),
			Lifetime{48 * h, 24 * h}, Lifetime{2 * h, 30 * time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := PolicyFrom(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if p.CA != tt.ca || p.Cert != tt.cert {
				t.Errorf("got CA %+v cert %+v, want %+v %+v", p.CA, p.Cert, tt.ca, tt.cert)
			}
			if got, want := p.AuxCA(), (Lifetime{tt.ca.Duration, tt.cert.RenewBefore}); got != want {
				t.Errorf("AuxCA = %+v, want %+v (upstream quirk)", got, want)
			}
		})
	}
	if DefaultPolicy() != must(PolicyFrom(v1.KubeVirtCertificateRotateStrategy{})) {
		t.Error("DefaultPolicy differs from the policy of an empty strategy")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestPolicyLifetimeOf(t *testing.T) {
	p := DefaultPolicy()
	for name, want := range map[string]Lifetime{
		SecretCA: p.CA, SecretExportCA: p.AuxCA(), SecretBackupCA: p.AuxCA(), SecretAPI: p.Cert, SecretHandlerClient: p.Cert,
	} {
		if got := p.LifetimeOf(name); got != want {
			t.Errorf("LifetimeOf(%s) = %+v, want %+v", name, got, want)
		}
	}
}

func TestPolicyValidation(t *testing.T) {
	const pre = "spec.certificateRotateStrategy.selfSigned."
	h := time.Hour
	tests := []struct {
		name  string
		in    v1.KubeVirtCertificateRotateStrategy
		wants []string // substrings of the error
	}{
		{"negative CA duration", selfSigned(&v1.CertConfig{Duration: dur(-h)}, nil), []string{pre + "ca.duration (-1h0m0s) must be at least 1m0s"}},
		{"zero server duration", selfSigned(nil, &v1.CertConfig{Duration: dur(0)}), []string{pre + "server.duration (0s)"}},
		{"negative renewBefore", selfSigned(nil, &v1.CertConfig{RenewBefore: dur(-h)}), []string{pre + "server.renewBefore (-1h0m0s) must be at least 10s"}},
		{"zero renewBefore", selfSigned(&v1.CertConfig{RenewBefore: dur(0)}, nil), []string{pre + "ca.renewBefore (0s) must be at least 10s"}},
		{"a lifetime of one second: constant reissue", selfSigned(nil, &v1.CertConfig{Duration: dur(time.Second), RenewBefore: dur(time.Second / 2)}),
			[]string{pre + "server.duration (1s) must be at least 1m0s", pre + "server.renewBefore (500ms) must be at least 10s"}},
		{"59s", selfSigned(&v1.CertConfig{Duration: dur(59 * time.Second)}, nil), []string{pre + "ca.duration (59s) must be at least 1m0s"}},
		{"renewBefore of 9s", selfSigned(nil, &v1.CertConfig{Duration: dur(time.Minute), RenewBefore: dur(9 * time.Second)}),
			[]string{pre + "server.renewBefore (9s) must be at least 10s"}},
		{"not a Go duration (stored under an older CRD)", selfSigned(&v1.CertConfig{Duration: &v1.Duration{Invalid: `"7d"`}}, &v1.CertConfig{RenewBefore: &v1.Duration{Invalid: `"9999999999h"`}}),
			[]string{pre + `ca.duration: "7d" is not a Go duration`, pre + `server.renewBefore: "9999999999h" is not a Go duration`}},
		{"renewBefore equal to duration", selfSigned(&v1.CertConfig{Duration: dur(h), RenewBefore: dur(h)}, nil),
			[]string{pre + "ca.renewBefore (1h0m0s) must be shorter than " + pre + "ca.duration (1h0m0s)"}},
		{"renewBefore longer than duration", selfSigned(nil, &v1.CertConfig{Duration: dur(h), RenewBefore: dur(2 * h)}),
			[]string{pre + "server.renewBefore (2h0m0s) must be shorter than " + pre + "server.duration"}},
		{"server renewBefore not shorter than CA duration (export/backup CA loop)",
			selfSigned(&v1.CertConfig{Duration: dur(10 * h)}, &v1.CertConfig{Duration: dur(48 * h), RenewBefore: dur(10 * h)}),
			[]string{pre + "server.renewBefore (10h0m0s) must be shorter than " + pre + "ca.duration (10h0m0s)"}},
		{"two fields wrong: both named", selfSigned(&v1.CertConfig{Duration: dur(-h)}, &v1.CertConfig{RenewBefore: dur(-h)}),
			[]string{pre + "ca.duration", pre + "server.renewBefore"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := PolicyFrom(tt.in)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// The shortest lifetimes pass: the default renewBefore of a 1m duration (12s) too.
func TestPolicyMinimumsPass(t *testing.T) {
	for _, s := range []v1.KubeVirtCertificateRotateStrategy{
		selfSigned(&v1.CertConfig{Duration: dur(time.Minute), RenewBefore: dur(10 * time.Second)}, &v1.CertConfig{Duration: dur(time.Minute), RenewBefore: dur(10 * time.Second)}),
		selfSigned(&v1.CertConfig{Duration: dur(2 * time.Minute)}, &v1.CertConfig{Duration: dur(time.Minute)}),
	} {
		if _, err := PolicyFrom(s); err != nil {
			t.Errorf("%+v: %v", s.SelfSigned, err)
		}
	}
}
