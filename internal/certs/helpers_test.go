package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/virt-operator/virt-operator/internal/strategy"
)

const (
	testNS   = "kubevirt"
	testOpNS = "kubevirt-op"
)

// t0 is the fake clock's start; tests move it by adding durations.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// keyPool is a pool of pre-generated keys handed out round-robin across all
// tests, so the tests exercise the injectable KeyGen; the pool is large
// enough that no test sees the same key twice.
var keyPool = sync.OnceValue(func() []crypto.Signer {
	keys := make([]crypto.Signer, 512)
	for i := range keys {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		keys[i] = k
	}
	return keys
})

var keyCursor atomic.Uint64

func pooledKey() (crypto.Signer, error) {
	keys := keyPool()
	return keys[(keyCursor.Add(1)-1)%uint64(len(keys))], nil
}

var testIssuer = Issuer{Key: pooledKey}

var allSecretNames = []string{
	SecretCA, SecretExportCA, SecretBackupCA, SecretAPI, SecretController, SecretExportProxy, SecretOperator,
	SecretHandlerServer, SecretHandlerClient, SecretHandlerMigrationClient, SecretHandlerVsockClient,
	SecretHandlerMonitoringClient, SecretSyncControllerClient, SecretSyncControllerServer,
}

func nsFor(name string) string {
	if IsCAName(name) || name == SecretOperator {
		return testOpNS
	}
	return testNS
}

func shell(name string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: nsFor(name), Labels: map[string]string{"app.kubernetes.io/managed-by": "virt-operator"}},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{TLSCertKey: {}, TLSPrivateKeyKey: {}},
	}
}

// testStrategy mimics the generated strategy's certificate-related objects:
// 14 Secret shells, the 4 CA ConfigMaps (kubevirt-ca listed twice, as upstream
// does), two webhook configurations and two APIServices without caBundle.
func testStrategy() *strategy.Strategy {
	s := &strategy.Strategy{}
	for _, n := range allSecretNames {
		s.Secrets = append(s.Secrets, shell(n))
	}
	for _, n := range []string{SecretBackupCA, SecretCA, SecretExportCA, ConfigMapExternalCA, SecretCA} {
		s.ConfigMaps = append(s.ConfigMaps, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: testOpNS}})
	}
	hook := func() admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: testNS, Name: svcAPI}}
	}
	s.ValidatingWebhookConfigurations = []*admissionregistrationv1.ValidatingWebhookConfiguration{
		{ObjectMeta: metav1.ObjectMeta{Name: "virt-api-validator"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{Name: "a.kubevirt.io", ClientConfig: hook()}, {Name: "b.kubevirt.io", ClientConfig: hook()}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "virt-operator-validator"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{Name: "c.kubevirt.io", ClientConfig: hook()}}},
	}
	s.MutatingWebhookConfigurations = []*admissionregistrationv1.MutatingWebhookConfiguration{
		{ObjectMeta: metav1.ObjectMeta{Name: "virt-api-mutator"}, Webhooks: []admissionregistrationv1.MutatingWebhook{
			{Name: "m.kubevirt.io", ClientConfig: hook()}, {Name: "n.kubevirt.io", ClientConfig: hook()}}},
	}
	for _, v := range []string{"v1", "v1alpha3"} {
		s.APIServices = append(s.APIServices, &apiregistrationv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: v + ".subresources.kubevirt.io"},
			Spec:       apiregistrationv1.APIServiceSpec{Group: "subresources.kubevirt.io", Version: v},
		})
	}
	return s
}

// liveFrom turns a Fill result into the live objects of the next reconcile,
// as if the controller had written them all.
func liveFrom(r *Result) (map[types.NamespacedName]*corev1.Secret, map[types.NamespacedName]*corev1.ConfigMap) {
	secrets := map[types.NamespacedName]*corev1.Secret{}
	for _, s := range r.Secrets {
		secrets[key(s.Namespace, s.Name)] = s.DeepCopy()
	}
	cms := map[types.NamespacedName]*corev1.ConfigMap{}
	for _, c := range r.ConfigMaps {
		cms[key(c.Namespace, c.Name)] = c.DeepCopy()
	}
	return secrets, cms
}

func mustFill(t testing.TB, s *strategy.Strategy, in Inputs) *Result {
	t.Helper()
	r, err := Fill(s, in)
	if err != nil {
		t.Fatalf("Fill: %v", err)
	}
	return r
}

// secretOf issues the certificate of profile name (in its test namespace)
// and returns it as a Secret with the duration annotation of policy p.
func secretOf(t testing.TB, name string, ca *KeyPair, p Policy, now time.Time) (*corev1.Secret, *KeyPair) {
	t.Helper()
	prof, ok := ProfileFor(name, nsFor(name))
	if !ok {
		t.Fatalf("no profile for %s", name)
	}
	life := p.LifetimeOf(name)
	kp, err := testIssuer.Issue(prof, ca, now, life.Duration)
	if err != nil {
		t.Fatal(err)
	}
	s := shell(name)
	kp.SetSecret(s, life.Duration)
	return s, kp
}
