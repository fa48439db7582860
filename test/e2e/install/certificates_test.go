package install_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/operator"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
)

// serialOf is the serial number of the certificate in a Secret.
func (e *env) serialOf(name string) string {
	e.t.Helper()
	sec := &corev1.Secret{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, sec); err != nil {
		e.t.Fatal(err)
	}
	kp, err := certs.ParseSecret(sec)
	if err != nil {
		e.t.Fatal(err)
	}
	return kp.Cert.SerialNumber.String()
}

// webhookAnswers: a TLS client that trusts only the CA bundle the API server
// is given for virt-operator-validator completes a handshake with the
// operator's webhook server, as the API server would.
func (e *env) webhookAnswers(addr string) error {
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Name: "virt-operator-validator"}, vwc); err != nil {
		return err
	}
	w := vwc.Webhooks[0]
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(w.ClientConfig.CABundle)
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12,
		ServerName: w.ClientConfig.Service.Name + "." + w.ClientConfig.Service.Namespace + ".svc"})
	if err != nil {
		return err
	}
	return conn.Close()
}

// An upgrade paused before its first step keeps its certificates renewed
// (lifetimes of minutes here): the operator's webhook certificate and virt-api's
// are reissued while paused, the webhook still answers with the bundle the API
// server is given, the CR is edited and resumed, and the upgrade completes.
func TestCertificatesRenewedWhilePaused(t *testing.T) {
	t.Parallel()
	e := startEnvWithoutOperator(t, 3)
	webhook := sandboxtest.FreeAddr(t)
	e.startOperator(func(o *operator.Options) { o.WebhookAddr = webhook })
	t.Cleanup(e.stopOperator)
	duration := func(d time.Duration) *v1.Duration { return &v1.Duration{Duration: d} }
	// The shortest leaf the policy takes (a minute), renewed 15 s after it is
	// issued: the renewals under test come in seconds, not minutes.
	e.createKubeVirt(v1.KubeVirtSpec{ImageTag: "v1.8.4", HandlerRollout: &v1.HandlerRolloutPolicy{BakeTime: duration(2 * time.Second)},
		CertificateRotateStrategy: v1.KubeVirtCertificateRotateStrategy{
			SelfSigned: &v1.KubeVirtSelfSignConfiguration{
				CA:     &v1.CertConfig{Duration: duration(20 * time.Minute), RenewBefore: duration(5 * time.Minute)},
				Server: &v1.CertConfig{Duration: duration(time.Minute), RenewBefore: duration(45 * time.Second)},
			}}})
	e.waitAvailable(3 * time.Minute)
	operatorCert, apiCert := e.serialOf(certs.SecretOperator), e.serialOf("kubevirt-virt-api-certs")

	e.updateSpec(func(s *v1.KubeVirtSpec) { s.Paused, s.ImageTag = true, "v1.9.0" })
	e.eventually("the upgrade held before its first step", time.Minute, func() (bool, error) {
		h := e.kubeVirt().Status.RolloutHold
		return h != nil && h.Reason == "Paused" && h.Step != "", nil
	})
	e.eventually("both certificates reissued while paused", 2*time.Minute, func() (bool, error) {
		return e.serialOf(certs.SecretOperator) != operatorCert && e.serialOf("kubevirt-virt-api-certs") != apiCert, nil
	})
	kv := e.kubeVirt()
	if kv.Status.RolloutHold == nil || kv.Status.ObservedKubeVirtVersion != "v1.8.4" {
		t.Fatalf("the certificates were renewed by an upgrade that was not held: hold %+v, observed %s", kv.Status.RolloutHold, kv.Status.ObservedKubeVirtVersion)
	}
	e.eventually("the operator's webhook answers with the bundle the API server has", time.Minute, func() (bool, error) {
		err := e.webhookAnswers(webhook)
		return err == nil, nil
	})

	e.updateSpec(func(s *v1.KubeVirtSpec) { s.Paused = false })
	e.eventually("the upgrade done", 4*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		return kv.Status.ObservedKubeVirtVersion == "v1.9.0" && kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID, nil
	})
}

// A component that cannot get pods is named: with the PriorityClass the
// components use deleted before an install, virt-api's ReplicaSet cannot
// create its pods, and Degraded says so with the API server's reason; with it
// created again, the install completes.
func TestMissingPriorityClassIsNamed(t *testing.T) {
	t.Parallel()
	e := startEnv(t, 3)
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt-cluster-critical"}}
	if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(pc), pc); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(context.Background(), pc); err != nil {
		t.Fatal(err)
	}
	e.createKubeVirt(v1.KubeVirtSpec{ImageTag: "v1.9.0"})
	e.eventually("virt-api created", time.Minute, func() (bool, error) {
		err := e.c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "virt-api"}, &appsv1.Deployment{})
		return err == nil, client.IgnoreNotFound(err)
	})
	e.eventually("Degraded naming the missing PriorityClass", time.Minute, func() (bool, error) {
		d := condition(e.kubeVirt(), v1.KubeVirtConditionDegraded)
		return d != nil && d.Status == corev1.ConditionTrue && d.Reason == "ComponentPodsNotCreated" &&
			strings.Contains(d.Message, "kubevirt-cluster-critical"), nil
	})
	t.Logf("Degraded: %s", condition(e.kubeVirt(), v1.KubeVirtConditionDegraded).Message)

	recreated := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: pc.Name}, Value: pc.Value,
		GlobalDefault: pc.GlobalDefault, Description: pc.Description, PreemptionPolicy: pc.PreemptionPolicy}
	if err := e.c.Create(context.Background(), recreated); err != nil {
		t.Fatal(err)
	}
	e.waitAvailable(4 * time.Minute)
}
