package certs

import (
	"bytes"
	"crypto/x509"
	"strings"
	"testing"
	"time"
)

func newCA(t *testing.T, cn string, now time.Time, d time.Duration) *KeyPair {
	t.Helper()
	kp, err := testIssuer.NewCA(cn, now, d)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

func subjects(t *testing.T, bundle []byte) []string {
	t.Helper()
	certs, err := ParseBundle(bundle)
	if err != nil {
		t.Fatalf("bundle does not parse: %v", err)
	}
	var out []string
	for _, c := range certs {
		out = append(out, c.Subject.CommonName)
	}
	return out
}

func TestBundle(t *testing.T) {
	cur := newCA(t, "current", t0, 100*time.Hour)
	a := newCA(t, "a", t0.Add(-50*time.Hour), 60*time.Hour)     // expires t0+10h
	b := newCA(t, "b", t0.Add(-10*time.Hour), 60*time.Hour)     // expires t0+50h
	c := newCA(t, "c", t0.Add(-10*time.Hour), 60*time.Hour)     // expires t0+50h too: tie
	old := newCA(t, "old", t0.Add(-70*time.Hour), 60*time.Hour) // expired at t0-10h

	want := Bundle(cur, []*x509.Certificate{a.Cert, b.Cert, c.Cert}, t0)
	for _, prev := range [][]*x509.Certificate{
		{c.Cert, b.Cert, a.Cert},
		{b.Cert, a.Cert, c.Cert, a.Cert, cur.Cert, nil},
		{old.Cert, a.Cert, c.Cert, b.Cert, b.Cert},
	} {
		if got := Bundle(cur, prev, t0); !bytes.Equal(got, want) {
			t.Errorf("order, duplicates or expired inputs changed the bundle:\n%s\nwant\n%s", subjects(t, got), subjects(t, want))
		}
	}
	got := subjects(t, want)
	if len(got) != 4 || got[0] != "current" || got[3] != "a" {
		t.Errorf("bundle %v, want current first, a (earliest expiry) last", got)
	}
	if got := subjects(t, Bundle(cur, []*x509.Certificate{a.Cert, b.Cert}, t0.Add(10*time.Hour))); strings.Join(got, ",") != "current,b" {
		t.Errorf("after a expired: %v, want [current b]", got)
	}
	if got := subjects(t, Bundle(nil, []*x509.Certificate{a.Cert}, t0)); strings.Join(got, ",") != "a" {
		t.Errorf("no current CA: %v", got)
	}
	if next := nextBundleChange(cur, []*x509.Certificate{b.Cert, a.Cert, old.Cert}, t0); !next.Equal(a.Cert.NotAfter) {
		t.Errorf("next bundle change %s, want a's expiry %s", next, a.Cert.NotAfter)
	}
}

func TestBundleCap(t *testing.T) {
	cur := newCA(t, "current", t0, time.Hour)
	var prev []*x509.Certificate
	for i := range MaxBundleCerts + 5 {
		prev = append(prev, newCA(t, "p", t0, time.Duration(i+1)*time.Hour).Cert)
	}
	certs, err := ParseBundle(Bundle(cur, prev, t0))
	if err != nil || len(certs) != MaxBundleCerts {
		t.Fatalf("got %d certificates (%v), want %d", len(certs), err, MaxBundleCerts)
	}
	if !certs[0].Equal(cur.Cert) || !certs[1].NotAfter.Equal(t0.Add(time.Duration(MaxBundleCerts+5)*time.Hour)) {
		t.Error("the cap must keep the current CA and the latest-expiring previous ones")
	}
}

func TestParseBundle(t *testing.T) {
	ca := newCA(t, "x", t0, time.Hour)
	data := append([]byte("-----BEGIN FOO-----\nAAAA\n-----END FOO-----\n"), ca.CertPEM...)
	data = append(data, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\ntrailing"...)
	certs, err := ParseBundle(data)
	if len(certs) != 1 || !certs[0].Equal(ca.Cert) {
		t.Errorf("got %d certificates, want the one good one", len(certs))
	}
	for _, w := range []string{`block 0: type "FOO"`, "block 2:", "trailing data"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not mention %q", err, w)
		}
	}
	if certs, err := ParseBundle(nil); len(certs) != 0 || err != nil {
		t.Errorf("empty bundle: %v %v", certs, err)
	}
}
