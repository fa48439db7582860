package certs

import (
	"crypto/x509"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Names of the certificate Secrets and CA ConfigMaps (§3.2.1 of the upstream
// notes). A CA ConfigMap has the name of its CA Secret.
const (
	SecretCA                      = "kubevirt-ca"
	SecretExportCA                = "kubevirt-export-ca"
	SecretBackupCA                = "kubevirt-backup-ca"
	SecretAPI                     = "kubevirt-virt-api-certs"
	SecretController              = "kubevirt-controller-certs"
	SecretExportProxy             = "kubevirt-exportproxy-certs"
	SecretOperator                = "kubevirt-operator-certs"
	SecretHandlerServer           = "kubevirt-virt-handler-server-certs"
	SecretHandlerClient           = "kubevirt-virt-handler-certs"
	SecretHandlerMigrationClient  = "kubevirt-virt-handler-migration-client-certs"
	SecretHandlerVsockClient      = "kubevirt-virt-handler-vsock-client-certs"
	SecretHandlerMonitoringClient = "kubevirt-virt-handler-monitoring-client-certs"
	SecretSyncControllerClient    = "kubevirt-synchronization-controller-certs"
	SecretSyncControllerServer    = "kubevirt-synchronization-controller-server-certs"
	// The virt-template bundle's servers (FG Template).
	SecretTemplateAPI     = "kubevirt-virt-template-api-certs"
	SecretTemplateWebhook = "kubevirt-virt-template-webhook-certs"
	SecretTemplateMetrics = "kubevirt-virt-template-controller-metrics-certs"
	// ConfigMapExternalCA holds CA certificates an admin adds to the kubevirt-ca bundle.
	ConfigMapExternalCA = "kubevirt-external-ca"
	// CABundleKey is the data key of the CA ConfigMaps.
	CABundleKey = "ca-bundle"
	// TLSCertKey and TLSPrivateKeyKey are the data keys of a kubernetes.io/tls Secret.
	TLSCertKey       = "tls.crt"
	TLSPrivateKeyKey = "tls.key"
	// MaxBundleCerts caps a CA bundle; the oldest certificates go first.
	MaxBundleCerts = 50
)

const (
	clusterDomain      = "cluster.local"
	cnNodePrefix       = "kubevirt.io:system:node:"
	cnClientPrefix     = "kubevirt.io:system:client:"
	svcAPI             = "virt-api"
	svcController      = "virt-controller"
	svcExportProxy     = "virt-exportproxy"
	svcOperator        = "kubevirt-operator-webhook"
	svcHandler         = "virt-handler"
	svcSyncController  = "virt-synchronization-controller"
	svcTemplateAPI     = "virt-template-api-service"
	svcTemplateWebhook = "virt-template-webhook-service"
	svcTemplateMetrics = "virt-template-controller-manager-metrics-service"
)

// Kind says what a certificate is used for.
type Kind int

const (
	KindCA     Kind = iota + 1 // a self-signed CA
	KindServer                 // a TLS server certificate (ServerAuth)
	KindClient                 // a TLS client certificate (ClientAuth)
)

func (k Kind) String() string {
	switch k {
	case KindCA:
		return "CA"
	case KindServer:
		return "server"
	case KindClient:
		return "client"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Profile is what one certificate Secret must hold.
type Profile struct {
	Kind       Kind
	CommonName string
	DNSNames   []string // sorted; empty for CAs and client certificates
	// CA is the name of the CA Secret that signs it; empty for a CA.
	CA string
}

// ProfileFor returns the profile of the Secret with that name in that
// namespace (the namespace goes into the DNS names), and false for a name the
// operator does not issue.
func ProfileFor(name, namespace string) (Profile, bool) {
	server := func(cn, svc string) Profile {
		return Profile{Kind: KindServer, CommonName: cn, DNSNames: ServiceDNSNames(svc, namespace), CA: SecretCA}
	}
	podCN := func(svc string) string { return svc + "." + namespace + ".pod." + clusterDomain }
	client := func(who string) Profile {
		return Profile{Kind: KindClient, CommonName: cnClientPrefix + who, CA: SecretCA}
	}
	switch name {
	case SecretCA:
		return Profile{Kind: KindCA, CommonName: "kubevirt.io"}, true
	case SecretExportCA:
		return Profile{Kind: KindCA, CommonName: "export.kubevirt.io"}, true
	case SecretBackupCA:
		return Profile{Kind: KindCA, CommonName: "backup.kubevirt.io"}, true
	case SecretAPI:
		return server(podCN(svcAPI), svcAPI), true
	case SecretController:
		return server(podCN(svcController), svcController), true
	case SecretExportProxy:
		return server(podCN(svcExportProxy), svcExportProxy), true
	case SecretOperator:
		return server(podCN(svcOperator), svcOperator), true
	case SecretHandlerServer:
		return server(cnNodePrefix+svcHandler, svcHandler), true
	case SecretSyncControllerServer:
		return server(cnNodePrefix+svcSyncController, svcSyncController), true
	case SecretTemplateAPI:
		return server(podCN(svcTemplateAPI), svcTemplateAPI), true
	case SecretTemplateWebhook:
		return server(podCN(svcTemplateWebhook), svcTemplateWebhook), true
	case SecretTemplateMetrics:
		return server(podCN(svcTemplateMetrics), svcTemplateMetrics), true
	case SecretHandlerClient:
		return client(svcHandler), true
	case SecretHandlerMigrationClient:
		return client("migration"), true
	case SecretHandlerVsockClient:
		return client("vsock"), true
	case SecretHandlerMonitoringClient:
		return client("monitoring"), true
	case SecretSyncControllerClient:
		return client(svcSyncController), true
	}
	return Profile{}, false
}

// ServiceDNSNames are the names a client may use for a Service, sorted:
// <svc>, <svc>.<ns>, <svc>.<ns>.svc and <svc>.<ns>.svc.cluster.local. The API
// server calls webhooks and APIServices at <svc>.<ns>.svc.
func ServiceDNSNames(svc, namespace string) []string {
	n := []string{svc, svc + "." + namespace, svc + "." + namespace + ".svc",
		svc + "." + namespace + ".svc." + clusterDomain}
	slices.Sort(n)
	return n
}

// mismatch says how cert differs from the profile, or "" if it matches.
func (p Profile) mismatch(cert *x509.Certificate) string {
	if !p.namedBy(cert.Subject.CommonName) {
		return fmt.Sprintf("common name is %q, want %q", cert.Subject.CommonName, p.CommonName)
	}
	if cert.IsCA != (p.Kind == KindCA) {
		return fmt.Sprintf("IsCA is %t, want a %s certificate", cert.IsCA, p.Kind)
	}
	got := slices.Sorted(slices.Values(cert.DNSNames))
	if !slices.Equal(got, p.DNSNames) {
		return fmt.Sprintf("DNS names are %v, want %v", got, p.DNSNames)
	}
	if want := p.extKeyUsage(); want != nil && !slices.Equal(cert.ExtKeyUsage, want) {
		return fmt.Sprintf("extended key usage is %v, want %v", cert.ExtKeyUsage, want)
	}
	return ""
}

// namedBy: cn is the profile's common name; for a CA also as upstream writes
// it, "<name>@<unix seconds>" (kubevirt.io@1764892800), so a CA upstream
// issued is kept on a take-over rather than reissued.
func (p Profile) namedBy(cn string) bool {
	if cn == p.CommonName {
		return true
	}
	issued, ok := strings.CutPrefix(cn, p.CommonName+"@")
	if p.Kind != KindCA || !ok || issued == "" {
		return false
	}
	_, err := strconv.ParseInt(issued, 10, 64)
	return err == nil
}

// caCommonName is the common name of a CA issued at now, as upstream names
// its CAs (its operator checks leaves against the CA, not the name, but the
// same form keeps a hand-back from looking any different).
func caCommonName(name string, now time.Time) string {
	return fmt.Sprintf("%s@%d", name, now.Unix())
}

func (p Profile) extKeyUsage() []x509.ExtKeyUsage {
	switch p.Kind {
	case KindServer:
		return []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	case KindClient:
		return []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	return nil
}

// IsCAName reports whether the Secret (or ConfigMap) of that name holds a CA.
func IsCAName(name string) bool {
	return name == SecretCA || name == SecretExportCA || name == SecretBackupCA
}
