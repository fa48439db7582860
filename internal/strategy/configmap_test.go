package strategy

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

const testNS = "kubevirt"

func testConfig() *deployid.Config {
	cfg := &deployid.Config{Namespace: testNS, Registry: "quay.io/kubevirt", KubeVirtVersion: "v1.6.0"}
	cfg.ID = cfg.ComputeID()
	return cfg
}

func tm(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func om(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: map[string]string{metadata.AppLabel: name}}
}

func clusterOM(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Labels: map[string]string{metadata.AppLabel: ""}}
}

// fullStrategy holds one object of every kind a strategy can hold, with enough
// content (quantities, int-or-strings, schemas, nested maps) to catch a lossy
// round trip.
func fullStrategy(t testing.TB) *Strategy {
	t.Helper()
	labels := map[string]string{"kubevirt.io": "virt-api"}
	podSpec := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{metadata.RequiredSCCAnnotation: metadata.RequiredSCCRestricted}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "kubevirt-apiserver",
			Containers: []corev1.Container{{
				Name:  "virt-api",
				Image: "quay.io/kubevirt/virt-api:v1.6.0",
				Args:  []string{"--port", "8443"},
				Ports: []corev1.ContainerPort{{Name: "virt-api", ContainerPort: 8443, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("5m"), corev1.ResourceMemory: resource.MustParse("500Mi"),
				}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8443), Scheme: corev1.URISchemeHTTPS}},
					InitialDelaySeconds: 15,
				},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), RunAsNonRoot: ptr.To(true)},
			}},
		},
	}
	rule := []rbacv1.PolicyRule{{APIGroups: []string{"kubevirt.io"}, Resources: []string{"virtualmachines"}, Verbs: []string{"get", "list"}}}
	sideEffects := admissionregistrationv1.SideEffectClassNone
	s := &Strategy{}
	objs := []client.Object{
		&corev1.ServiceAccount{TypeMeta: tm("v1", "ServiceAccount"), ObjectMeta: om("kubevirt-apiserver")},
		&rbacv1.ClusterRole{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRole"), ObjectMeta: clusterOM("kubevirt.io:view"), Rules: rule},
		&rbacv1.ClusterRoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ObjectMeta: clusterOM("kubevirt-apiserver"),
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "kubevirt-apiserver"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "kubevirt-apiserver", Namespace: testNS}}},
		&rbacv1.Role{TypeMeta: tm("rbac.authorization.k8s.io/v1", "Role"), ObjectMeta: om("kubevirt-monitoring"), Rules: rule},
		&rbacv1.RoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "RoleBinding"), ObjectMeta: om("kubevirt-monitoring"),
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "kubevirt-monitoring"}},
		&apiextensionsv1.CustomResourceDefinition{TypeMeta: tm("apiextensions.k8s.io/v1", "CustomResourceDefinition"), ObjectMeta: clusterOM("kubevirts.kubevirt.io"),
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "kubevirt.io", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "kubevirts", Singular: "kubevirt", Kind: "KubeVirt", ListKind: "KubeVirtList", ShortNames: []string{"kv"}},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true), Description: "a line\n---\nthat looks like a separator"},
						},
					}},
				}},
			}},
		&corev1.Service{TypeMeta: tm("v1", "Service"), ObjectMeta: om("virt-api"), Spec: corev1.ServiceSpec{
			Selector: labels, Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(8443), Protocol: corev1.ProtocolTCP}},
		}},
		&corev1.Secret{TypeMeta: tm("v1", "Secret"), ObjectMeta: om("kubevirt-virt-api-certs"), Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": []byte("-----BEGIN CERTIFICATE-----\n---\n")}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{TypeMeta: tm("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"), ObjectMeta: clusterOM("virt-api-validator"),
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "virtualmachine-validator.kubevirt.io", SideEffects: &sideEffects, AdmissionReviewVersions: []string{"v1"},
				ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: testNS, Name: "virt-api", Path: ptr.To("/validate")}}}}},
		&admissionregistrationv1.MutatingWebhookConfiguration{TypeMeta: tm("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"), ObjectMeta: clusterOM("virt-api-mutator"),
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "virtualmachines-mutator.kubevirt.io", SideEffects: &sideEffects, AdmissionReviewVersions: []string{"v1"}}}},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{TypeMeta: tm("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"), ObjectMeta: clusterOM("kubevirt-node-restriction-binding"),
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "kubevirt-node-restriction-policy", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}},
		&admissionregistrationv1.ValidatingAdmissionPolicy{TypeMeta: tm("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"), ObjectMeta: clusterOM("kubevirt-node-restriction-policy"),
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.x == oldObject.spec.x"}}}},
		&apiregistrationv1.APIService{TypeMeta: tm("apiregistration.k8s.io/v1", "APIService"), ObjectMeta: clusterOM("v1.subresources.kubevirt.io"),
			Spec: apiregistrationv1.APIServiceSpec{Group: "subresources.kubevirt.io", Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15,
				Service: &apiregistrationv1.ServiceReference{Namespace: testNS, Name: "virt-api", Port: ptr.To[int32](443)}}},
		&appsv1.Deployment{TypeMeta: tm("apps/v1", "Deployment"), ObjectMeta: om("virt-api"), Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: podSpec,
		}},
		&appsv1.DaemonSet{TypeMeta: tm("apps/v1", "DaemonSet"), ObjectMeta: om("virt-handler"), Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: podSpec,
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromString("10%"))}},
		}},
		&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "security.openshift.io/v1", "kind": "SecurityContextConstraints",
			"metadata":                 map[string]any{"name": "kubevirt-handler"},
			"allowPrivilegedContainer": true,
			"priority":                 int64(10),
			"users":                    []any{"system:serviceaccount:kubevirt:kubevirt-handler"},
		}},
		&monitoringv1.ServiceMonitor{TypeMeta: tm("monitoring.coreos.com/v1", "ServiceMonitor"), ObjectMeta: om("kubevirt"),
			Spec: monitoringv1.ServiceMonitorSpec{Selector: metav1.LabelSelector{MatchLabels: map[string]string{metadata.PrometheusLabel: "true"}},
				Endpoints: []monitoringv1.Endpoint{{Port: "metrics", Scheme: ptr.To(monitoringv1.SchemeHTTPS)}}}},
		&monitoringv1.PrometheusRule{TypeMeta: tm("monitoring.coreos.com/v1", "PrometheusRule"), ObjectMeta: om("prometheus-kubevirt-rules"),
			Spec: monitoringv1.PrometheusRuleSpec{Groups: []monitoringv1.RuleGroup{{Name: "kubevirt.rules", Rules: []monitoringv1.Rule{{
				Alert: "VirtAPIDown", Expr: intstr.FromString("kubevirt_virt_api_up == 0"), For: ptr.To(monitoringv1.Duration("10m")),
			}}}}}},
		&corev1.ConfigMap{TypeMeta: tm("v1", "ConfigMap"), ObjectMeta: om("kubevirt-ca"), Data: map[string]string{"ca-bundle": ""}},
		&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "route.openshift.io/v1", "kind": "Route",
			"metadata": map[string]any{"name": "vmexport-proxy", "namespace": testNS},
			"spec":     map[string]any{"to": map[string]any{"kind": "Service", "name": "virt-exportproxy"}, "tls": map[string]any{"termination": "reencrypt"}},
		}},
	}
	for _, o := range objs {
		if err := s.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestFullStrategyHasEveryKind(t *testing.T) {
	kinds := map[string]bool{}
	for _, o := range fullStrategy(t).Objects() {
		kinds[o.GetObjectKind().GroupVersionKind().Kind] = true
	}
	if len(kinds) != 20 {
		t.Fatalf("the test strategy has %d kinds, want all 20: %v", len(kinds), kinds)
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	in := fullStrategy(t)
	cfg := testConfig()
	cm, err := Encode(in, cfg, "monitoring")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("encoded size of the hand-made strategy: %d bytes", len(cm.Data[ManifestsKey]))

	if cm.GenerateName != "kubevirt-install-strategy-" || cm.Namespace != testNS || cm.Name != "" {
		t.Errorf("identity: generateName %q namespace %q name %q", cm.GenerateName, cm.Namespace, cm.Name)
	}
	wantLabels := map[string]string{"app.kubernetes.io/managed-by": "virt-operator", "kubevirt.io/install-strategy": ""}
	if !equality.Semantic.DeepEqual(cm.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", cm.Labels, wantLabels)
	}
	wantAnn := map[string]string{
		"kubevirt.io/install-strategy-version":              "v1.6.0",
		"kubevirt.io/install-strategy-registry":             "quay.io/kubevirt",
		"kubevirt.io/install-strategy-identifier":           cfg.ID,
		"kubevirt.io/install-strategy-cm-encoding":          "gzip+base64",
		"kubevirt.io/install-strategy-monitoring-namespace": "monitoring",
	}
	if !equality.Semantic.DeepEqual(cm.Annotations, wantAnn) {
		t.Errorf("annotations %v, want %v", cm.Annotations, wantAnn)
	}

	out, err := Decode(cm)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(in, out) {
		inObjs, outObjs := in.Objects(), out.Objects()
		for i := range inObjs {
			if i < len(outObjs) && !equality.Semantic.DeepEqual(inObjs[i], outObjs[i]) {
				t.Errorf("object %d differs:\n in: %#v\nout: %#v", i, inObjs[i], outObjs[i])
			}
		}
		t.Fatalf("round trip changed the strategy (%d objects in, %d out)", len(inObjs), len(outObjs))
	}

	// Deterministic: the same strategy encodes to the same bytes.
	again, err := Encode(in, cfg, "monitoring")
	if err != nil {
		t.Fatal(err)
	}
	if again.Data[ManifestsKey] != cm.Data[ManifestsKey] {
		t.Error("encoding the same strategy twice gave different payloads")
	}
}

func TestManifestsStripStatusAndCreationTimestampAndFollowObjectsOrder(t *testing.T) {
	s := &Strategy{}
	dep := &appsv1.Deployment{ObjectMeta: om("virt-api")} // no TypeMeta: the scheme supplies it
	dep.CreationTimestamp = metav1.Unix(1700000000, 0)
	dep.Status.Replicas = 3
	sa := &corev1.ServiceAccount{ObjectMeta: om("kubevirt-apiserver")}
	for _, o := range []client.Object{dep, sa} {
		if err := s.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	y, err := Manifests(s)
	if err != nil {
		t.Fatal(err)
	}
	text := string(y)
	for _, banned := range []string{"status", "creationTimestamp"} {
		if strings.Contains(text, banned) {
			t.Errorf("manifests contain %q:\n%s", banned, text)
		}
	}
	if dep.Status.Replicas != 3 || dep.CreationTimestamp.IsZero() || dep.Kind != "" {
		t.Error("Manifests modified its input")
	}
	sai, depi := strings.Index(text, "kind: ServiceAccount"), strings.Index(text, "kind: Deployment")
	if sai < 0 || depi < 0 || sai > depi || strings.Count(text, "---\n") != 2 {
		t.Errorf("want two documents, ServiceAccount first:\n%s", text)
	}
	if !strings.Contains(text, "apiVersion: apps/v1") {
		t.Errorf("apiVersion missing:\n%s", text)
	}
}

func TestDecodePlainPayload(t *testing.T) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kubevirt-install-strategy-abcde", Namespace: testNS,
			Labels: map[string]string{metadata.InstallStrategyLabel: ""}},
		Data: map[string]string{ManifestsKey: `---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: kubevirt-handler
  namespace: kubevirt
---
# a comment-only document is skipped
---
apiVersion: security.openshift.io/v1
kind: SecurityContextConstraints
metadata:
  name: kubevirt-handler
allowPrivilegedContainer: true
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: virt-handler
  namespace: kubevirt
spec:
  template:
    spec:
      containers:
      - name: virt-handler
        image: quay.io/kubevirt/virt-handler:v1.6.0
`},
	}
	s, err := Decode(cm)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.ServiceAccounts) != 1 || len(s.SecurityContextConstraints) != 1 || len(s.DaemonSets) != 1 || len(s.Objects()) != 3 {
		t.Fatalf("decoded %v", s.Inventory())
	}
	if got := s.DaemonSets[0].Spec.Template.Spec.Containers[0].Image; got != "quay.io/kubevirt/virt-handler:v1.6.0" {
		t.Errorf("image %q", got)
	}
	if s.DaemonSets[0].Kind != "DaemonSet" || s.DaemonSets[0].APIVersion != "apps/v1" {
		t.Errorf("TypeMeta not kept: %+v", s.DaemonSets[0].TypeMeta)
	}
	if v, _, _ := unstructured.NestedBool(s.SecurityContextConstraints[0].Object, "allowPrivilegedContainer"); !v {
		t.Error("SCC field lost")
	}
}

func gzipBase64(t *testing.T, data []byte) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func TestDecodeCorruptPayloads(t *testing.T) {
	const sa = "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n"
	encoded := map[string]string{metadata.InstallStrategyConfigMapEncodingAnnotation: "gzip+base64"}
	cases := []struct {
		name        string
		annotations map[string]string
		data        map[string]string
		wantInError string
	}{
		{"no manifests key", encoded, map[string]string{"other": "x"}, `no "manifests" key`},
		{"bad base64", encoded, map[string]string{ManifestsKey: "not base64!"}, "bad base64"},
		{"base64 but not gzip", encoded, map[string]string{ManifestsKey: base64.StdEncoding.EncodeToString([]byte(sa))}, "bad gzip"},
		{"truncated gzip", encoded, map[string]string{ManifestsKey: gzipBase64(t, []byte(sa))[:20]}, "bad "},
		{"empty encoded payload", encoded, map[string]string{ManifestsKey: ""}, "bad gzip"},
		{"unknown encoding", map[string]string{metadata.InstallStrategyConfigMapEncodingAnnotation: "zstd"}, map[string]string{ManifestsKey: sa}, `unknown encoding "zstd"`},
		{"empty plain payload", nil, map[string]string{ManifestsKey: ""}, "holds no objects"},
		{"only separators", nil, map[string]string{ManifestsKey: "---\n---\n"}, "holds no objects"},
		{"empty gzip payload", encoded, map[string]string{ManifestsKey: gzipBase64(t, nil)}, "holds no objects"},
		{"bad YAML", nil, map[string]string{ManifestsKey: "apiVersion: v1\nkind: [ServiceAccount\n"}, "document 1: bad YAML"},
		{"bad separator", nil, map[string]string{ManifestsKey: sa + "---x\n" + sa}, "bad YAML"},
		{"bad YAML in gzip", encoded, map[string]string{ManifestsKey: gzipBase64(t, []byte(sa+"---\nkind: : :\n"))}, "document 2"},
		{"object without a name", nil, map[string]string{ManifestsKey: "apiVersion: v1\nkind: ConfigMapList\nitems: []\n"}, "v1 ConfigMapList has no name"},
		{"no kind", nil, map[string]string{ManifestsKey: "apiVersion: v1\nmetadata:\n  name: a\n"}, "apiVersion and kind are required"},
		{"not an object", nil, map[string]string{ManifestsKey: "- a\n- b\n"}, "not a Kubernetes object"},
		{"wrong field type", nil, map[string]string{ManifestsKey: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  replicas: many\n"}, "Deployment"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt-install-strategy-x", Namespace: testNS, Annotations: tc.annotations}, Data: tc.data}
			s, err := Decode(cm)
			if err == nil {
				t.Fatalf("decoded %v, want an error", s.Inventory())
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("error %q does not wrap ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), tc.wantInError) || !strings.Contains(err.Error(), "kubevirt/kubevirt-install-strategy-x") {
				t.Errorf("error %q should name the ConfigMap and contain %q", err, tc.wantInError)
			}
			if testing.Verbose() {
				t.Log(err)
			}
		})
	}
}

func TestDecodeNilConfigMap(t *testing.T) {
	if _, err := Decode(nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v", err)
	}
}

func TestEncodeRefusesAnOversizedPayload(t *testing.T) {
	random := make([]byte, 1<<20) // incompressible
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	s := &Strategy{}
	if err := s.Add(&corev1.Secret{ObjectMeta: om("big"), Data: map[string][]byte{"blob": random}}); err != nil {
		t.Fatal(err)
	}
	cm, err := Encode(s, testConfig(), "")
	if err == nil {
		t.Fatalf("encoded a %d-byte payload", len(cm.Data[ManifestsKey]))
	}
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "bytes") || !strings.Contains(err.Error(), "900 KiB") {
		t.Errorf("error %q should wrap ErrTooLarge and give the size and the limit", err)
	}
	if testing.Verbose() {
		t.Log(err)
	}

	// Just under the limit is fine: base64 of gzip of ~600 KiB random stays below 900 KiB.
	s.Secrets[0].Data["blob"] = random[:600<<10]
	if _, err := Encode(s, testConfig(), ""); err != nil {
		t.Errorf("a 600 KiB secret should fit: %v", err)
	}
}

// Kinds a strategy has no list for are kept, in order, as a release's own dump may
// hold any; a listed kind is read by its kind whatever apiVersion the payload says,
// as upstream's loader reads it (upstream writes some with a wrong one).
func TestDecodeKeepsForeignKindsAndReadsListedKindsByKind(t *testing.T) {
	payload := strings.Join([]string{
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n",
		"apiVersion: instancetype.kubevirt.io/v1beta1\nkind: VirtualMachineClusterInstancetype\nmetadata:\n  name: u1.small\nspec:\n  cpu:\n    guest: 1\n",
		"apiVersion: v1\nkind: ValidatingAdmissionPolicy\nmetadata:\n  name: kubevirt-node-restriction-policy\n",
		"apiVersion: monitoring.coreos.com\nkind: ServiceMonitor\nmetadata:\n  name: prometheus-kubevirt-rules\n  namespace: monitoring\n",
	}, "---\n")
	s, err := Decode(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: testNS}, Data: map[string]string{ManifestsKey: payload}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Others) != 2 || s.Others[0].GetKind() != "Pod" || s.Others[1].GetName() != "u1.small" {
		t.Fatalf("Others %v", s.Inventory())
	}
	if guest, _, _ := unstructured.NestedInt64(s.Others[1].Object, "spec", "cpu", "guest"); guest != 1 {
		t.Errorf("the instancetype lost its spec: %v", s.Others[1].Object)
	}
	if len(s.ValidatingAdmissionPolicies) != 1 || len(s.ServiceMonitors) != 1 {
		t.Fatalf("listed kinds with odd apiVersions: %v", s.Inventory())
	}
	if gv := s.ServiceMonitors[0].GroupVersionKind().GroupVersion().String(); gv != "monitoring.coreos.com/v1" {
		t.Errorf("ServiceMonitor read as %s", gv)
	}
	if gv := s.ValidatingAdmissionPolicies[0].GroupVersionKind().GroupVersion().String(); gv != "admissionregistration.k8s.io/v1" {
		t.Errorf("ValidatingAdmissionPolicy read as %s", gv)
	}
}

func TestEncodeErrors(t *testing.T) {
	good := fullStrategy(t)
	noID := testConfig()
	noID.ID = ""
	noKind := &Strategy{Others: []*unstructured.Unstructured{{Object: map[string]any{"metadata": map[string]any{"name": "r"}}}}}
	cases := []struct {
		name string
		s    *Strategy
		cfg  *deployid.Config
		want string
	}{
		{"no config", good, nil, "no id"},
		{"no id", good, noID, "no id"},
		{"nil strategy", nil, testConfig(), "no strategy"},
		{"empty strategy", &Strategy{}, testConfig(), "holds no objects"},
		{"unstructured without a kind", noKind, testConfig(), "needs apiVersion and kind"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Encode(tc.s, tc.cfg, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestMeta(t *testing.T) {
	cfg := testConfig()
	cm, err := Encode(fullStrategy(t), cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	got, ok := Meta(cm)
	want := StrategyMeta{ID: cfg.ID, Version: "v1.6.0", Registry: "quay.io/kubevirt", MonitorNamespace: "", MonitorRecorded: true}
	if !ok || got != want {
		t.Errorf("Meta = %+v, %v; want %+v, true", got, ok, want)
	}

	delete(cm.Annotations, MonitorNamespaceAnnotation) // as upstream writes it
	if got, ok := Meta(cm); !ok || got.MonitorRecorded {
		t.Errorf("without the monitoring annotation: %+v, %v", got, ok)
	}
	delete(cm.Labels, metadata.InstallStrategyLabel)
	if _, ok := Meta(cm); ok {
		t.Error("a ConfigMap without the install-strategy label is not a strategy")
	}
	if _, ok := Meta(nil); ok {
		t.Error("nil is not a strategy")
	}
}

// Upstream's strategies list the CA ConfigMaps twice: one of each is kept.
func TestDecodeKeepsOneObjectPerName(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kubevirt-ca\n  namespace: kubevirt\n"
	s, err := Decode(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: testNS}, Data: map[string]string{ManifestsKey: cm + "---\n" + cm}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.ConfigMaps) != 1 {
		t.Errorf("%d ConfigMaps", len(s.ConfigMaps))
	}
}

// The digest is the manifests', written without holding them.
func TestManifestsDigest(t *testing.T) {
	s := &Strategy{}
	if err := s.Add(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "kubevirt"}}); err != nil {
		t.Fatal(err)
	}
	m, err := Manifests(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ManifestsDigest(s)
	if err != nil || got != sha256.Sum256(m) {
		t.Fatalf("digest %x (%v), want the manifests' %x", got, err, sha256.Sum256(m))
	}
	if _, err := ManifestsDigest(&Strategy{}); err == nil {
		t.Fatal("an empty strategy has a digest")
	}
}
