package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/admission"
	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/operator"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
)

// Every spec the operator would refuse, or hold on forever, is refused when it
// is written: by the CRD when it is no value of the field's type (a duration Go
// cannot parse, a number its Go type cannot hold), else by the operator's
// webhook, served by admission.Server and called by the API server. Either way
// the error names the field.
func TestBadSpecsAreRefusedByTheCRDOrTheWebhook(t *testing.T) {
	ctx := t.Context()
	ns := createNamespace(t, ctx, "admission")
	kv := kubeVirtFromYAML(t, ns, `{imageTag: v1.9.0}`)
	if err := k8s.Create(ctx, kv); err != nil {
		t.Fatal(err)
	}
	registerWebhook(t, ctx, ns)

	typo := `[{"op":"replace","path":"/spec/template/spec/containers/0/livenessProbe/periodSeconds","value":5}]`
	cases := []struct {
		name    string
		spec    string
		webhook bool // refused by the webhook, not the CRD
		want    string
	}{
		{"certificate duration 7d", `certificateRotateStrategy: {selfSigned: {ca: {duration: 7d}}}`, false, "spec.certificateRotateStrategy.selfSigned.ca.duration"},
		{"renewBefore that overflows", `certificateRotateStrategy: {selfSigned: {server: {renewBefore: 9999999999h}}}`, false, "spec.certificateRotateStrategy.selfSigned.server.renewBefore"},
		{"bakeTime that overflows", `handlerRollout: {bakeTime: 9999999999h}`, false, "spec.handlerRollout.bakeTime"},
		{"progressDeadline with a unit twice", `handlerRollout: {progressDeadline: 1h1h}`, false, "spec.handlerRollout.progressDeadline"},
		{"upstream's batchEvictionInterval in days", `workloadUpdateStrategy: {batchEvictionInterval: 1d}`, false, "spec.workloadUpdateStrategy.batchEvictionInterval"},
		{"our batchEvictionInterval empty", `workloadUpdates: {batchEvictionInterval: ""}`, false, "spec.workloadUpdates.batchEvictionInterval"},
		{"retryBackoff negative", `workloadUpdates: {retryBackoff: -1m}`, false, "spec.workloadUpdates.retryBackoff"},
		{"maxRetryBackoff in days", `workloadUpdates: {maxRetryBackoff: 7d}`, false, "spec.workloadUpdates.maxRetryBackoff"},
		{"a workload-update window of 7d", `workloadUpdates: {windows: [{start: "01:00", duration: 7d}]}`, false, "spec.workloadUpdates.windows[0].duration"},
		{"a rollout window of 1e6 hours", `rolloutWindows: [{start: "01:00", duration: 1000000h}]`, false, "spec.rolloutWindows[0].duration"},
		{"infra replicas beyond a uint8", `infra: {replicas: 300}`, false, "spec.infra.replicas"},
		{"a negative migration limit (a uint32)", `configuration: {migrations: {parallelMigrationsPerCluster: -1}}`, false, "spec.configuration.migrations.parallelMigrationsPerCluster"},

		{"a merge patch with a typo'd field", `customizeComponents: {patches: [{resourceType: Deployment, resourceName: virt-api, type: merge, patch: '{"spec":{"replica":3}}'}]}`, true,
			`spec.customizeComponents.patches[0] (type merge, resourceType Deployment, resourceName virt-api) does not apply to Deployment ` + ns + `/virt-api: the patched object does not decode: unknown field "spec.replica"`},
		{"a json patch path the release lacks", `customizeComponents: {patches: [{resourceType: Deployment, resourceName: virt-api, type: json, patch: '` + typo + `'}]}`, true,
			"spec.customizeComponents.patches[0] (type json, resourceType Deployment, resourceName virt-api) does not apply to Deployment " + ns + "/virt-api"},
		{"synchronizationPort http", `synchronizationPort: http`, true, `spec.synchronizationPort: "http" is not a port number (1-65535)`},
		{"a rollout window in a time zone that does not exist", `rolloutWindows: [{start: "02:00", duration: 1h, timeZone: Mars/Olympus}]`, true, `spec.rolloutWindows[0] never opens: time zone "Mars/Olympus"`},
		{"a workload-update window in a time zone that does not exist", `workloadUpdates: {windows: [{start: "02:00", duration: 1h, timeZone: Atlantis/Central}]}`, true, `spec.workloadUpdates.windows[0] never opens: time zone "Atlantis/Central"`},
		{"a 75-character pre-release imageTag", `imageTag: v1.9.0-` + strings.Repeat("x", 68), true, "spec.imageTag: \"v1.9.0-xxx"},
		{"an imageTag with a +", `imageTag: v1.9.0+build.1`, true, `spec.imageTag: "v1.9.0+build.1" is not an image tag`},
		{"an imageRegistry with capitals", `imageRegistry: quay.io/KubeVirt`, true, `spec.imageRegistry: "quay.io/KubeVirt" is not an image registry`},
		{"a productVersion with a space", `productVersion: "1.0 beta"`, true, `spec.productVersion: "1.0 beta" becomes the app.kubernetes.io/version label`},
		{"a productName too long for a label", `productName: ` + strings.Repeat("p", 64), true, "spec.productName"},
		{"a certificate lifetime of one second", `certificateRotateStrategy: {selfSigned: {server: {duration: 1s}}}`, true,
			"spec.certificateRotateStrategy.selfSigned.server.duration (1s) must be at least 1m0s"},
		{"a renewBefore of 5s", `certificateRotateStrategy: {selfSigned: {ca: {duration: 1h, renewBefore: 5s}}}`, true,
			"spec.certificateRotateStrategy.selfSigned.ca.renewBefore (5s) must be at least 10s"},
		{"a canary slower than its deadline", `handlerRollout: {bakeTime: 10m, progressDeadline: 5m}`, true, "spec.handlerRollout: progressDeadline"},
		{"a probe selector with an operator that is none", `handlerRollout: {dataPlaneChecks: {migrationProbe: {vmiSelector: {matchExpressions: [{key: a, operator: Sometimes}]}}}}`, true,
			"spec.handlerRollout.dataPlaneChecks.migrationProbe.vmiSelector:"},
		{"a probe timeout of 0", `handlerRollout: {dataPlaneChecks: {migrationProbe: {vmiSelector: {matchLabels: {a: b}}, timeout: "0"}}}`, true,
			"spec.handlerRollout.dataPlaneChecks.migrationProbe.timeout: must be positive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := patchSpec(ctx, kv, c.spec)
			if err == nil {
				t.Fatalf("the API server accepted spec %q", c.spec)
			}
			byWebhook := strings.Contains(err.Error(), "admission webhook")
			if byWebhook != c.webhook || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("refused (by the webhook: %v, want %v) without naming %q: %v", byWebhook, c.webhook, c.want, err)
			}
			t.Log(err)
		})
	}
	for _, good := range []string{
		`certificateRotateStrategy: {selfSigned: {ca: {duration: 2562h, renewBefore: 33.6h}, server: {duration: 1m, renewBefore: 10s}}}`,
		`handlerRollout: {bakeTime: 1m30s, progressDeadline: 15m}`,
		`handlerRollout: {dataPlaneChecks: {canaryVMIs: true, canaryPod: true, migrationProbe: {vmiSelector: {matchLabels: {canary-probe: "yes"}}, timeout: 2m, whenNoneEligible: Pass}}}`,
		`customizeComponents: {patches: [{resourceType: Deployment, resourceName: virt-api, type: json, patch: '[{"op":"replace","path":"/spec/replicas","value":3}]'}]}`,
		`{imageTag: v1.9.0-rc.1, imageRegistry: "registry.local:5000/kubevirt", productVersion: "4.18.1", synchronizationPort: "9186"}`,
		`rolloutWindows: [{start: "02:00", duration: 4h, timeZone: Europe/Berlin, days: [Sunday]}]`,
	} {
		if err := patchSpec(ctx, kv, good); err != nil {
			t.Errorf("a valid spec %q was refused: %v", good, err)
		}
	}
}

// patchSpec merge-patches kv's spec with the YAML spec.
func patchSpec(ctx context.Context, kv *unstructured.Unstructured, spec string) error {
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(spec), &m); err != nil {
		return err
	}
	raw, err := json.Marshal(map[string]any{"spec": m})
	if err != nil {
		return err
	}
	return k8s.Patch(ctx, kv.DeepCopy(), client.RawPatch(types.MergePatchType, raw))
}

// registerWebhook serves the operator's webhooks (admission.Server) on a local
// port with a certificate for 127.0.0.1 in kubevirt-operator-certs, and points
// the API server at its update path for KubeVirt CRs in ns only, as the
// strategy's virt-operator-validator does through the Service.
func registerWebhook(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	secret, caPEM := loopbackServingSecret(t, ns)
	if err := k8s.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	srvCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	srv := &admission.Server{Addr: addr, Namespace: ns, Reader: k8s, Workloads: k8s, Env: deployid.MapEnv{}, Log: logr.Discard()}
	go func() { done <- srv.Start(srvCtx) }()
	url := "https://" + addr + admission.PathUpdate
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "virt-operator-validator-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "kubevirt-validate-update.kubevirt.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caPEM},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"kubevirt.io"}, APIVersions: []string{"v1"}, Resources: []string{"kubevirts"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(10)),
		}},
	}
	if err := k8s.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), cfg)
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the webhook server: %v", err)
		}
	})
	// The API server picks the configuration up in a moment.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(v1.GroupVersion.WithKind("KubeVirtList"))
		if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil || len(list.Items) == 0 {
			return false, err
		}
		err := patchSpec(ctx, &list.Items[0], `synchronizationPort: http`)
		return err != nil && strings.Contains(err.Error(), "admission webhook"), nil
	})
	if err != nil {
		t.Fatalf("the API server does not call the webhook: %v", err)
	}
}

// loopbackServingSecret is kubevirt-operator-certs with a self-signed
// certificate for 127.0.0.1, and the certificate as the CA bundle.
func loopbackServingSecret(t *testing.T, ns string) (*corev1.Secret, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: certs.SecretOperator, Namespace: ns},
		Data:       map[string][]byte{certs.TLSCertKey: certPEM, certs.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})},
	}, certPEM
}

// A CR stored under an older CRD, one without the duration rule, with values
// Go cannot parse as durations, stalls nothing: the operator of another
// namespace lists it (its informer decodes every CR in one list) and reconciles
// its own CR; the operator of its own namespace reports the fields in its
// status. Nothing the operator writes changes the stored values.
func TestACRWithAnUndecodableDurationStallsNothing(t *testing.T) {
	ctx := t.Context()
	badNS, goodNS := createNamespace(t, ctx, "undecodable"), createNamespace(t, ctx, "decodable")

	// An older CRD: the duration fields without their rule.
	crds := crdClient(t)
	current := &apiextensionsv1.CustomResourceDefinition{}
	if err := crds.Get(ctx, client.ObjectKey{Name: "kubevirts.kubevirt.io"}, current); err != nil {
		t.Fatal(err)
	}
	older := current.DeepCopy()
	for i := range older.Spec.Versions {
		if s := older.Spec.Versions[i].Schema; s != nil {
			// How many fields carry the rule is api/v1's test (duration_test.go).
			if n := dropDurationRules(s.OpenAPIV3Schema); n == 0 {
				t.Fatal("the CRD has no duration rule to drop")
			}
		}
	}
	installCRD(t, ctx, crds, older, true)
	t.Cleanup(func() { installCRD(t, context.Background(), crds, current, false) })

	bad := kubeVirtFromYAML(t, badNS, `
certificateRotateStrategy: {selfSigned: {server: {renewBefore: 7d}}}
handlerRollout: {bakeTime: 9999999999h}`)
	bad.SetName("kubevirt")
	if err := k8s.Create(ctx, bad); err != nil {
		t.Fatalf("the older CRD refused the CR: %v", err)
	}
	installCRD(t, ctx, crds, current, false)

	// Read through the operator's own types: the list decodes.
	all := &v1.KubeVirtList{}
	if err := k8s.List(ctx, all); err != nil {
		t.Fatalf("the KubeVirt list does not decode: %v", err)
	}

	good := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: goodNS}}
	if err := k8s.Create(ctx, good); err != nil {
		t.Fatal(err)
	}
	stop := runOperator(t, goodNS)
	waitFor(t, ctx, good, "the good CR Deploying", func(kv *v1.KubeVirt) bool { return kv.Status.Phase == v1.KubeVirtPhaseDeploying })
	badKV := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: badNS}}
	waitFor(t, ctx, badKV, "the CR elsewhere marked ignored", func(kv *v1.KubeVirt) bool {
		return conditionSays(kv, v1.KubeVirtConditionSynchronized, "ignored")
	})
	stop()

	stop = runOperator(t, badNS)
	for _, field := range []string{`spec.certificateRotateStrategy.selfSigned.server.renewBefore: "7d" is not a Go duration`,
		`spec.handlerRollout.bakeTime: "9999999999h" is not a Go duration`} {
		waitFor(t, ctx, badKV, "a condition naming "+field, func(kv *v1.KubeVirt) bool {
			return conditionSays(kv, v1.KubeVirtConditionDegraded, field) && conditionSays(kv, v1.KubeVirtConditionStalled, field)
		})
	}
	stop()
	for _, c := range badKV.Status.Conditions {
		if c.Type == v1.KubeVirtConditionDegraded {
			t.Logf("Degraded %s %s: %s", c.Status, c.Reason, c.Message)
		}
	}

	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(v1.GroupVersion.WithKind("KubeVirt"))
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(badKV), stored); err != nil {
		t.Fatal(err)
	}
	renew, _, _ := unstructured.NestedString(stored.Object, "spec", "certificateRotateStrategy", "selfSigned", "server", "renewBefore")
	bake, _, _ := unstructured.NestedString(stored.Object, "spec", "handlerRollout", "bakeTime")
	if renew != "7d" || bake != "9999999999h" || len(stored.GetFinalizers()) == 0 {
		t.Errorf("after the operator's writes: renewBefore %q, bakeTime %q, finalizers %v", renew, bake, stored.GetFinalizers())
	}
}

func crdClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(restConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// dropDurationRules removes the duration rule (and the length bound its cost
// estimate needs) from every field that has it, and says how many.
func dropDurationRules(s *apiextensionsv1.JSONSchemaProps) int {
	if s == nil {
		return 0
	}
	n := 0
	var kept apiextensionsv1.ValidationRules
	for _, r := range s.XValidations {
		if strings.Contains(r.Rule, v1.DurationPattern) {
			n++
			s.MaxLength = nil
			continue
		}
		kept = append(kept, r)
	}
	s.XValidations = kept
	for k, p := range s.Properties {
		n += dropDurationRules(&p)
		s.Properties[k] = p
	}
	if s.Items != nil {
		n += dropDurationRules(s.Items.Schema)
	}
	return n
}

// installCRD replaces the KubeVirt CRD's versions with want's and waits until
// the API server serves them: it then accepts (older) or refuses a bad duration.
func installCRD(t *testing.T, ctx context.Context, crds client.Client, want *apiextensionsv1.CustomResourceDefinition, accepts bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		live := &apiextensionsv1.CustomResourceDefinition{}
		if err := crds.Get(ctx, client.ObjectKey{Name: want.Name}, live); err != nil {
			return false, err
		}
		live.Spec.Versions = want.Spec.Versions
		err := crds.Update(ctx, live)
		return err == nil, client.IgnoreNotFound(ignoreConflict(err))
	})
	if err != nil {
		t.Fatalf("updating the CRD: %v", err)
	}
	ns := createNamespace(t, ctx, "crd-probe")
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		probe := kubeVirtFromYAML(t, ns, `handlerRollout: {bakeTime: 7d}`)
		err := k8s.Create(ctx, probe, client.DryRunAll)
		return (err == nil) == accepts, nil
	})
	if err != nil {
		t.Fatalf("the API server does not serve the new schema (accepts 7d: want %v): %v", accepts, err)
	}
}

func ignoreConflict(err error) error {
	if err != nil && strings.Contains(err.Error(), "the object has been modified") {
		return nil
	}
	return err
}

// runOperator runs the operator for namespace ns until the returned stop is
// called (or the test ends).
func runOperator(t *testing.T, ns string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, restConfig, operator.Options{Namespace: ns, MetricsAddr: "0", HealthAddr: sandboxtest.FreeAddr(t)})
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the operator for %s exited with %v", ns, err)
		}
	}
	t.Cleanup(stop)
	return stop
}

func waitFor(t *testing.T, ctx context.Context, kv *v1.KubeVirt, what string, ok func(*v1.KubeVirt) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(kv), kv); err != nil {
			return false, err
		}
		return ok(kv), nil
	})
	if err != nil {
		t.Fatalf("%s/%s: no %s: phase %q, conditions %+v: %v", kv.Namespace, kv.Name, what, kv.Status.Phase, kv.Status.Conditions, err)
	}
}

func conditionSays(kv *v1.KubeVirt, typ v1.KubeVirtConditionType, text string) bool {
	for _, c := range kv.Status.Conditions {
		if c.Type == typ && strings.Contains(c.Message, text) {
			return true
		}
	}
	return false
}
