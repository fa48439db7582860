package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// KeyPair is a certificate with its private key, and their PEM encodings.
// CertPEM may hold a chain; Cert is its first certificate.
type KeyPair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// KeyGen makes a new private key.
type KeyGen func() (crypto.Signer, error)

// ECDSAP256 is the default KeyGen (see the package comment for why).
func ECDSAP256() (crypto.Signer, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

// Issuer issues certificates. The zero value uses ECDSAP256.
type Issuer struct {
	Key KeyGen
}

// clockSkew backdates NotBefore so a component whose clock runs a little
// behind accepts a certificate issued a moment ago.
const clockSkew = 5 * time.Minute

// NewCA issues a self-signed CA certificate valid from now for d.
func (i Issuer) NewCA(commonName string, now time.Time, d time.Duration) (*KeyPair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	return i.issue(tmpl, nil, now, d)
}

// NewServingCert issues a TLS server certificate for dnsNames signed by ca.
func (i Issuer) NewServingCert(ca *KeyPair, commonName string, dnsNames []string, now time.Time, d time.Duration) (*KeyPair, error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		DNSNames:    dnsNames,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	return i.issue(tmpl, ca, now, d)
}

// NewClientCert issues a TLS client certificate signed by ca.
func (i Issuer) NewClientCert(ca *KeyPair, commonName string, now time.Time, d time.Duration) (*KeyPair, error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return i.issue(tmpl, ca, now, d)
}

// Issue issues the certificate a profile describes, signed by ca (ignored
// for a CA).
func (i Issuer) Issue(p Profile, ca *KeyPair, now time.Time, d time.Duration) (*KeyPair, error) {
	switch p.Kind {
	case KindCA:
		return i.NewCA(caCommonName(p.CommonName, now), now, d)
	case KindServer:
		return i.NewServingCert(ca, p.CommonName, p.DNSNames, now, d)
	case KindClient:
		return i.NewClientCert(ca, p.CommonName, now, d)
	}
	return nil, fmt.Errorf("cannot issue a certificate of %s", p.Kind)
}

// NewCA issues a CA with the default Issuer.
func NewCA(commonName string, now time.Time, d time.Duration) (*KeyPair, error) {
	return Issuer{}.NewCA(commonName, now, d)
}

// NewServingCert issues a server certificate with the default Issuer.
func NewServingCert(ca *KeyPair, commonName string, dnsNames []string, now time.Time, d time.Duration) (*KeyPair, error) {
	return Issuer{}.NewServingCert(ca, commonName, dnsNames, now, d)
}

// NewClientCert issues a client certificate with the default Issuer.
func NewClientCert(ca *KeyPair, commonName string, now time.Time, d time.Duration) (*KeyPair, error) {
	return Issuer{}.NewClientCert(ca, commonName, now, d)
}

func (i Issuer) issue(tmpl *x509.Certificate, ca *KeyPair, now time.Time, d time.Duration) (*KeyPair, error) {
	if d <= 0 {
		return nil, fmt.Errorf("certificate %q: duration %s is not positive", tmpl.Subject.CommonName, d)
	}
	gen := i.Key
	if gen == nil {
		gen = ECDSAP256
	}
	key, err := gen()
	if err != nil {
		return nil, fmt.Errorf("certificate %q: generating key: %w", tmpl.Subject.CommonName, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("certificate %q: serial number: %w", tmpl.Subject.CommonName, err)
	}
	now = now.UTC().Truncate(time.Second)
	tmpl.SerialNumber = serial.Add(serial, big.NewInt(1)) // positive, never zero
	tmpl.NotBefore = now.Add(-clockSkew)
	tmpl.NotAfter = now.Add(d)
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.Cert, ca.Key
	} else if !tmpl.IsCA {
		return nil, fmt.Errorf("certificate %q: no CA to sign it", tmpl.Subject.CommonName)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return nil, fmt.Errorf("certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certificate %q: encoding key: %w", tmpl.Subject.CommonName, err)
	}
	return &KeyPair{
		Cert:    cert,
		Key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// SetSecret writes the key pair into a kubernetes.io/tls Secret (tls.crt,
// tls.key; any other data is dropped) and sets the kubevirt.io/duration
// annotation (DurationAnnotation).
func (kp *KeyPair) SetSecret(s *corev1.Secret, d time.Duration) {
	s.Type = corev1.SecretTypeTLS
	s.Data = map[string][]byte{TLSCertKey: kp.CertPEM, TLSPrivateKeyKey: kp.KeyPEM}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[metadata.CertificateDurationAnnotation] = DurationAnnotation(d)
}

// DurationAnnotation is the kubevirt.io/duration annotation's value in the
// form upstream writes and compares it, the Go text of a *metav1.Duration
// ("&Duration{Duration:168h0m0s,}"): written otherwise, upstream's operator
// reissues every certificate on a hand-back.
func DurationAnnotation(d time.Duration) string {
	return (&metav1.Duration{Duration: d}).String()
}

// parseDurationAnnotation reads the annotation in upstream's form or as a
// plain Go duration (what this operator wrote before).
func parseDurationAnnotation(s string) (time.Duration, error) {
	if inner, ok := strings.CutPrefix(s, "&Duration{Duration:"); ok {
		s = strings.TrimSuffix(inner, ",}")
	}
	return time.ParseDuration(s)
}

// ErrNoData marks a Secret that has no certificate yet (missing, or an empty
// shell), as opposed to one whose data is corrupt.
var ErrNoData = errors.New("no certificate data")

// ParseSecret reads the key pair of a kubernetes.io/tls Secret. The error
// names the Secret and says what is wrong; it wraps ErrNoData when the Secret
// is nil or tls.crt and tls.key are both empty.
func ParseSecret(s *corev1.Secret) (*KeyPair, error) {
	if s == nil {
		return nil, ErrNoData
	}
	certPEM, keyPEM := s.Data[TLSCertKey], s.Data[TLSPrivateKeyKey]
	where := "secret " + s.Namespace + "/" + s.Name
	switch {
	case len(certPEM) == 0 && len(keyPEM) == 0:
		return nil, fmt.Errorf("%s: %w", where, ErrNoData)
	case len(certPEM) == 0:
		return nil, fmt.Errorf("%s: %s is empty", where, TLSCertKey)
	case len(keyPEM) == 0:
		return nil, fmt.Errorf("%s: %s is empty", where, TLSPrivateKeyKey)
	}
	if b, _ := pem.Decode(certPEM); b == nil || b.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s: %s does not start with a PEM CERTIFICATE block", where, TLSCertKey)
	}
	if b, _ := pem.Decode(keyPEM); b == nil {
		return nil, fmt.Errorf("%s: %s holds no PEM block", where, TLSPrivateKeyKey)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: %s holds a key that cannot sign", where, TLSPrivateKeyKey)
	}
	leaf := pair.Leaf
	if leaf == nil { // GODEBUG=x509keypairleaf=0
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
	}
	return &KeyPair{Cert: leaf, Key: signer, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}
