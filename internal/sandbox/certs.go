package sandbox

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certFiles are the paths of the generated key material, all under DIR/certs.
type certFiles struct {
	CACert, ServingCert, ServingKey string
	SAKey, SAPub                    string // RSA pair: kcm signs tokens, apiserver verifies
	CAPEM                           []byte // for kubeconfig and client TLS
}

func newCertFiles(dir string) certFiles {
	c := filepath.Join(dir, "certs")
	return certFiles{
		CACert:      filepath.Join(c, "ca.crt"),
		ServingCert: filepath.Join(c, "apiserver.crt"),
		ServingKey:  filepath.Join(c, "apiserver.key"),
		SAKey:       filepath.Join(c, "sa.key"),
		SAPub:       filepath.Join(c, "sa.pub"),
	}
}

// generateCerts writes a CA, a kube-apiserver serving certificate for 127.0.0.1 and
// localhost signed by it, and an RSA service-account key pair. ECDSA keeps the TLS
// keys fast to generate; service-account keys are RSA as the recipe verified.
func generateCerts(dir string) (certFiles, error) {
	f := newCertFiles(dir)
	if err := os.MkdirAll(filepath.Dir(f.CACert), 0o700); err != nil {
		return f, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, err
	}
	now := time.Now().Add(-time.Hour) // tolerate small clock differences
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "sandbox-ca"},
		NotBefore:             now,
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return f, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return f, err
	}
	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, err
	}
	servingTmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now,
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(10, 0, 0, 1)},
	}
	servingDER, err := x509.CreateCertificate(rand.Reader, servingTmpl, caCert, servingKey.Public(), caKey)
	if err != nil {
		return f, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return f, err
	}
	f.CAPEM = pemEncode("CERTIFICATE", caDER)
	for path, data := range map[string][]byte{
		f.CACert:      f.CAPEM,
		f.ServingCert: pemEncode("CERTIFICATE", servingDER),
	} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return f, err
		}
	}
	for path, key := range map[string]crypto.PrivateKey{f.ServingKey: servingKey, f.SAKey: saKey} {
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return f, err
		}
		if err := os.WriteFile(path, pemEncode("PRIVATE KEY", der), 0o600); err != nil {
			return f, err
		}
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return f, err
	}
	return f, os.WriteFile(f.SAPub, pemEncode("PUBLIC KEY", pubDER), 0o644)
}

func pemEncode(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

// randomToken returns a 32-hex-digit bearer token.
func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
