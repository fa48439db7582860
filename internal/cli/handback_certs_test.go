package cli

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
)

var upstreamV190Env = deployid.MapEnv{deployid.EnvVirtOperatorImage: "quay.io/kubevirt/virt-operator:v1.9.0"}

// The stamps are what upstream's injectOperatorMetadata and customizer put on
// a certificate object: a product label only when set and a valid label
// value, the component label else "kubevirt"; the customizer identifier of
// spec.customizeComponents as written (the figures are upstream's own getHash
// of these specs, flags: {} included).
func TestUpstreamCertificateStamps(t *testing.T) {
	for _, tc := range []struct {
		name, spec                 string
		labels                     map[string]string
		customizer, id, generation string
	}{
		{"defaults", `{"imageTag":"v1.9.0"}`,
			map[string]string{"app.kubernetes.io/managed-by": "virt-operator", "app.kubernetes.io/component": "kubevirt"},
			"bf21a9e8fbc5a3846fb05b4fa0859e0917b2202f", "26d9c18701d6b1d6d39b6ef1473a28e3db8f806e", "7"},
		{"valid product values", `{"imageTag":"v1.9.0","productName":"acme","productVersion":"1.2.3","productComponent":"virt"}`,
			map[string]string{"app.kubernetes.io/managed-by": "virt-operator", "app.kubernetes.io/component": "virt",
				"app.kubernetes.io/version": "1.2.3", "app.kubernetes.io/part-of": "acme"},
			"bf21a9e8fbc5a3846fb05b4fa0859e0917b2202f", "", "7"},
		{"invalid product values are left out", `{"imageTag":"v1.9.0","productName":"Acme Virt","productVersion":"-1","productComponent":"virt/x"}`,
			map[string]string{"app.kubernetes.io/managed-by": "virt-operator", "app.kubernetes.io/component": "kubevirt"},
			"bf21a9e8fbc5a3846fb05b4fa0859e0917b2202f", "", "7"},
		{"customized", `{"imageTag":"v1.9.0","customizeComponents":{"patches":[{"resourceName":"virt-api","resourceType":"Deployment","patch":"{\"metadata\":{\"labels\":{\"a\":\"b\"}}}","type":"strategic"},{"resourceName":"*","resourceType":"Service","patch":"{}","type":"merge"}],"flags":{"api":{"v":"4"}}}}`,
			map[string]string{"app.kubernetes.io/managed-by": "virt-operator", "app.kubernetes.io/component": "kubevirt"},
			"3ece16318a4c9638b7ccaf9176f5a1cbfbac038a", "26d9c18701d6b1d6d39b6ef1473a28e3db8f806e", "7"},
		{"empty flags", `{"imageTag":"v1.9.0","customizeComponents":{"flags":{}}}`,
			map[string]string{"app.kubernetes.io/managed-by": "virt-operator", "app.kubernetes.io/component": "kubevirt"},
			"ca67f9b26b619e7a2996bfd36d782c1e5a1fd03d", "26d9c18701d6b1d6d39b6ef1473a28e3db8f806e", "7"},
	} {
		kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt", Generation: 7}}
		if err := json.Unmarshal([]byte(tc.spec), &kv.Spec); err != nil {
			t.Fatal(err)
		}
		s, err := upstreamCertificateStamps(kv, nil, upstreamV190Env)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(s.labels, tc.labels) {
			t.Errorf("%s: labels %v, want %v", tc.name, s.labels, tc.labels)
		}
		if got := s.secretAnnotations["kubevirt.io/customizer-identifier"]; got != tc.customizer {
			t.Errorf("%s: customizer identifier %s, want upstream's %s", tc.name, got, tc.customizer)
		}
		a := s.annotations
		if a["kubevirt.io/generation"] != tc.generation || a["kubevirt.io/install-strategy-version"] != "v1.9.0" ||
			a["kubevirt.io/install-strategy-registry"] != "quay.io/kubevirt" || (tc.id != "" && a["kubevirt.io/install-strategy-identifier"] != tc.id) {
			t.Errorf("%s: annotations %v", tc.name, a)
		}
	}
}

// A customizeComponents patch that upstream's operator applies to a
// certificate Secret (kind and name as it matches them) makes the stamps
// unknowable: refused by name. Patches of other objects are not.
func TestCertificateSecretPatches(t *testing.T) {
	for _, tc := range []struct {
		kind, name string
		refused    bool
	}{
		{"*", "*", true},
		{"Secret", "*", true},
		{"secret", "KUBEVIRT-CA", true},
		{"*", "kubevirt-virt-api-certs", true},
		{"Secret", "kubevirt-export-ca", true},
		{"Secret", "my-secret", false},
		{"Deployment", "*", false},
		{"ConfigMap", "kubevirt-ca", false},
		{"*", "virt-api", false},
	} {
		kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt"}}
		kv.Spec.CustomizeComponents.Patches = []v1.CustomizeComponentsPatch{
			{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.MergePatchType, Patch: "{}"},
			{ResourceType: tc.kind, ResourceName: tc.name, Type: v1.MergePatchType, Patch: "{}"},
		}
		_, err := upstreamCertificateStamps(kv, nil, upstreamV190Env)
		switch {
		case tc.refused && (err == nil || !strings.Contains(err.Error(), "spec.customizeComponents.patches[1] ("+tc.kind+" "+tc.name+") patches certificate Secrets")):
			t.Errorf("%s %s: %v, want it refused by name", tc.kind, tc.name, err)
		case !tc.refused && err != nil:
			t.Errorf("%s %s: refused: %v", tc.kind, tc.name, err)
		}
	}
}

// Restamping sets upstream's keys, keeps everyone else's (the duration
// annotation above all), drops this operator's own, and says whether it
// changed anything: a second pass changes nothing.
func TestRestamp(t *testing.T) {
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt", Generation: 2}}
	s, err := upstreamCertificateStamps(kv, nil, upstreamV190Env)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt-ca",
		Labels: map[string]string{"app.kubernetes.io/managed-by": "virt-operator", "team": "a"},
		Annotations: map[string]string{"kubevirt.io/duration": "&Duration{Duration:168h0m0s,}", "kubevirt.io/install-strategy-identifier": "ours",
			"kubevirt.io/virt-operator-desired-hash": "x"}}}
	if !s.restamp(secret, true) {
		t.Fatal("nothing changed")
	}
	want := map[string]string{"kubevirt.io/duration": "&Duration{Duration:168h0m0s,}", "kubevirt.io/install-strategy-identifier": s.target.ID,
		"kubevirt.io/install-strategy-version": "v1.9.0", "kubevirt.io/install-strategy-registry": "quay.io/kubevirt", "kubevirt.io/generation": "2",
		"kubevirt.io/customizer-identifier": "bf21a9e8fbc5a3846fb05b4fa0859e0917b2202f"}
	if !reflect.DeepEqual(secret.Annotations, want) || secret.Labels["team"] != "a" || secret.Labels["app.kubernetes.io/component"] != "kubevirt" {
		t.Errorf("restamped: labels %v annotations %v", secret.Labels, secret.Annotations)
	}
	if s.restamp(secret, true) {
		t.Error("a second restamp changed something")
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt-ca"}}
	s.restamp(cm, false)
	if _, ok := cm.Annotations["kubevirt.io/customizer-identifier"]; ok || cm.Annotations["kubevirt.io/generation"] != "2" {
		t.Errorf("a CA ConfigMap, which upstream does not customize: %v", cm.Annotations)
	}
}
