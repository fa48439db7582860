package admission

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"

	"github.com/virt-operator/virt-operator/internal/metadata"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/certs"
)

func servingSecret(t *testing.T, cn string) *corev1.Secret {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, DNSNames: []string{cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: certs.SecretOperator, Namespace: "kubevirt"},
		Data: map[string][]byte{
			certs.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			certs.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		},
	}
}

func newServer(t *testing.T, objs ...client.Object) (*Server, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// The operator manages the VMI CRD: its objects are user data an uninstall would delete.
	vmiCRD := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "virtualmachineinstances.kubevirt.io",
		Labels: map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "kubevirt.io", Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: "VirtualMachineInstance", Plural: "virtualmachineinstances"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}}}}
	mapper := testrestmapper.TestOnlyStaticRESTMapper(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(append(objs, vmiCRD)...).Build()
	return &Server{Namespace: "kubevirt", Reader: c, Workloads: c, Log: logr.Discard()}, c
}

func post(t *testing.T, url string, httpClient *http.Client, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	body, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClient.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	out := &admissionv1.AdmissionReview{}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil || out.Response == nil {
		t.Fatalf("status %d, not an AdmissionReview: %v", resp.StatusCode, err)
	}
	if out.Response.UID != req.UID {
		t.Errorf("response UID %s for request %s", out.Response.UID, req.UID)
	}
	return out.Response
}

func raw(t *testing.T, obj any) runtime.RawExtension {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: b}
}

// The three paths answer AdmissionReviews over TLS with the certificate of
// kubevirt-operator-certs, and pick up a rotated one without a restart.
func TestServerAnswersOverTLSWithTheOperatorsCertificate(t *testing.T) {
	secret := servingSecret(t, "kubevirt-operator-webhook.kubevirt.svc")
	existing := kubeVirt(func(kv *v1.KubeVirt) { kv.Status.Phase = v1.KubeVirtPhaseDeployed })
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm-1", Namespace: "default"}}
	s, c := newServer(t, secret, existing, vmi)

	ts := httptest.NewUnstartedServer(s.Handler())
	ts.TLS = &tls.Config{GetCertificate: s.certificate}
	ts.StartTLS()
	defer ts.Close()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(secret.Data[certs.TLSCertKey])
	httpClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "kubevirt-operator-webhook.kubevirt.svc"}}}

	create := post(t, ts.URL+PathCreate, httpClient, &admissionv1.AdmissionRequest{UID: types.UID("1"), Operation: admissionv1.Create, Object: raw(t, kubeVirt(nil))})
	if create.Allowed || !strings.Contains(create.Result.Message, AlreadyCreated) {
		t.Errorf("create of a second KubeVirt: %+v", create)
	}
	update := post(t, ts.URL+PathUpdate, httpClient, &admissionv1.AdmissionRequest{UID: types.UID("2"), Operation: admissionv1.Update,
		Object: raw(t, existing), OldObject: raw(t, existing)})
	if !update.Allowed {
		t.Errorf("an unchanged update: %+v", update.Result)
	}
	del := post(t, ts.URL+PathDelete, httpClient, &admissionv1.AdmissionRequest{UID: types.UID("3"), Operation: admissionv1.Delete, OldObject: raw(t, existing)})
	if del.Allowed || !strings.Contains(del.Result.Message, "1 VirtualMachineInstances") {
		t.Errorf("a delete with a VMI: %+v", del.Result)
	}

	// A rotated certificate is served from the next handshake on.
	rotated := servingSecret(t, "kubevirt-operator-webhook.kubevirt.svc")
	secret.Data = rotated.Data
	if err := c.Update(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(rotated.Data[certs.TLSCertKey])
	httpClient = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "kubevirt-operator-webhook.kubevirt.svc"}}}
	if again := post(t, ts.URL+PathUpdate, httpClient, &admissionv1.AdmissionRequest{UID: types.UID("4"), Object: raw(t, existing), OldObject: raw(t, existing)}); !again.Allowed {
		t.Errorf("after the rotation: %+v", again.Result)
	}

	resp, err := httpClient.Post(ts.URL+PathCreate, "application/json", strings.NewReader("not json"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("garbage: status %d", resp.StatusCode)
	}
}

func TestServerWithoutItsCertificateFailsTheHandshake(t *testing.T) {
	s, _ := newServer(t)
	if _, err := s.certificate(&tls.ClientHelloInfo{}); err == nil || !strings.Contains(err.Error(), certs.SecretOperator) {
		t.Errorf("no Secret: %v", err)
	}
}

// The server speaks HTTP/1.1 only: a client offering h2 gets http/1.1, one that
// speaks nothing but HTTP/2 gets no answer; and its reads are bounded.
func TestServerIsHTTP1OnlyWithTimeouts(t *testing.T) {
	secret := servingSecret(t, "kubevirt-operator-webhook.kubevirt.svc")
	s, _ := newServer(t, secret)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(secret.Data[certs.TLSCertKey])
	tlsConfig := &tls.Config{RootCAs: pool, ServerName: "kubevirt-operator-webhook.kubevirt.svc", NextProtos: []string{"h2", "http/1.1"}}

	conn, err := tls.Dial("tcp", l.Addr().String(), tlsConfig)
	if err != nil {
		t.Fatal(err)
	}
	if got := conn.ConnectionState().NegotiatedProtocol; got != "http/1.1" {
		t.Errorf("a client offering h2 and http/1.1 negotiated %q", got)
	}
	_ = conn.Close()

	url := "https://" + l.Addr().String() + PathUpdate
	kv := kubeVirt(nil)
	req := &admissionv1.AdmissionRequest{UID: types.UID("1"), Object: raw(t, kv), OldObject: raw(t, kv)}
	both := &http.Transport{TLSClientConfig: tlsConfig.Clone(), ForceAttemptHTTP2: true}
	defer both.CloseIdleConnections()
	if got := post(t, url, &http.Client{Transport: both}, req); !got.Allowed {
		t.Errorf("over HTTP/1.1: %+v", got.Result)
	}
	resp, err := (&http.Client{Transport: both}).Get("https://" + l.Addr().String() + PathUpdate)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.ProtoMajor != 1 {
		t.Errorf("a client that would speak HTTP/2 was answered in %s", resp.Proto)
	}

	h2only := &http.Transport{TLSClientConfig: tlsConfig.Clone(), Protocols: new(http.Protocols)}
	h2only.Protocols.SetHTTP2(true)
	defer h2only.CloseIdleConnections()
	if resp, err := (&http.Client{Transport: h2only}).Get("https://" + l.Addr().String() + PathUpdate); err == nil {
		_ = resp.Body.Close()
		t.Errorf("a client speaking only HTTP/2 was answered in %s", resp.Proto)
	}

	srv := s.httpServer()
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.IdleTimeout <= 0 || srv.WriteTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
		t.Errorf("unbounded: read header %v, read %v, write %v, idle %v, header bytes %d", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}
	if srv.ReadTimeout > 30*time.Second || srv.IdleTimeout < 90*time.Second {
		t.Errorf("read %v (the API server waits 10 s), idle %v (the API server's client keeps connections 90 s)", srv.ReadTimeout, srv.IdleTimeout)
	}
	if srv.TLSNextProto == nil || len(srv.TLSNextProto) != 0 {
		t.Errorf("TLSNextProto %v: net/http would configure HTTP/2", srv.TLSNextProto)
	}
}

// A client that never finishes its request headers is cut off.
func TestServerClosesASlowClient(t *testing.T) {
	secret := servingSecret(t, "kubevirt-operator-webhook.kubevirt.svc")
	s, _ := newServer(t, secret)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.serve(ctx, l) }()
	defer func() { cancel(); <-done }()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(secret.Data[certs.TLSCertKey])
	conn, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "kubevirt-operator-webhook.kubevirt.svc"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	start := time.Now()
	if _, err := conn.Write([]byte("POST " + PathCreate + " HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(readHeaderTimeout + 10*time.Second))
	if _, err := io.ReadAll(conn); err != nil {
		t.Fatalf("the connection was not closed by the server: %v", err)
	}
	if waited := time.Since(start); waited < readHeaderTimeout-time.Second {
		t.Errorf("closed after %v, before the read-header timeout", waited)
	}
}
