package certs

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Bundle is the PEM CA bundle for the ca-bundle key of a CA ConfigMap: the
// current CA first, then every previous certificate that has not expired yet,
// newest expiry first (ties broken by SHA-256 of the DER bytes), each
// certificate once (by SHA-256 of its DER bytes), at most MaxBundleCerts in
// all. Keeping a rotated CA until it expires lets clients trust certificates
// signed by either CA while the leaves are being reissued. The same inputs
// always give the same bytes.
func Bundle(current *KeyPair, previous []*x509.Certificate, now time.Time) []byte {
	var buf bytes.Buffer
	for _, c := range bundleCerts(current, previous, now) {
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}) // writes to a Buffer do not fail
	}
	return buf.Bytes()
}

// bundleCerts returns the certificates of Bundle, in order.
func bundleCerts(current *KeyPair, previous []*x509.Certificate, now time.Time) []*x509.Certificate {
	seen := map[[32]byte]bool{}
	var out, rest []*x509.Certificate
	if current != nil && current.Cert != nil {
		out = append(out, current.Cert)
		seen[sha256.Sum256(current.Cert.Raw)] = true
	}
	for _, c := range previous {
		if c == nil || !now.Before(c.NotAfter) {
			continue
		}
		sum := sha256.Sum256(c.Raw)
		if seen[sum] {
			continue
		}
		seen[sum] = true
		rest = append(rest, c)
	}
	slices.SortFunc(rest, func(a, b *x509.Certificate) int {
		if c := b.NotAfter.Compare(a.NotAfter); c != 0 {
			return c
		}
		sa, sb := sha256.Sum256(a.Raw), sha256.Sum256(b.Raw)
		return bytes.Compare(sa[:], sb[:])
	})
	out = append(out, rest...)
	if len(out) > MaxBundleCerts {
		out = out[:MaxBundleCerts]
	}
	return out
}

// nextBundleChange is when the bundle built from these inputs next changes
// on its own: the earliest expiry of a kept previous certificate, or zero.
func nextBundleChange(current *KeyPair, previous []*x509.Certificate, now time.Time) time.Time {
	var next time.Time
	for i, c := range bundleCerts(current, previous, now) {
		if i == 0 && current != nil && current.Cert != nil {
			continue // the current CA is reissued long before it expires
		}
		if next.IsZero() || c.NotAfter.Before(next) {
			next = c.NotAfter
		}
	}
	return next
}

// ParseBundle reads every certificate of a PEM bundle. Blocks that are not
// certificates, or do not parse, are skipped and reported in the error, so
// a damaged bundle still yields what can be read.
func ParseBundle(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	var errs []error
	for i := 0; ; i++ {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			errs = append(errs, fmt.Errorf("block %d: type %q is not CERTIFICATE", i, b.Type))
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			errs = append(errs, fmt.Errorf("block %d: %w", i, err))
			continue
		}
		certs = append(certs, c)
	}
	if len(bytes.TrimSpace(data)) > 0 {
		errs = append(errs, errors.New("trailing data that is not PEM"))
	}
	return certs, errors.Join(errs...)
}
