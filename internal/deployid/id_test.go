package deployid

import (
	"crypto/sha1" //nolint:gosec
	"encoding/hex"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// customizedKubeVirt uses every kind of input: placement, patches, flags, products.
func customizedKubeVirt() *v1.KubeVirt {
	return newKubeVirt(func(kv *v1.KubeVirt) {
		s := &kv.Spec
		s.ImageRegistry, s.ImageTag = "quay.io/kubevirt", "v1.7.0"
		s.ImagePullPolicy = corev1.PullAlways
		s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry-pull"}}
		s.ProductName, s.ProductVersion, s.ProductComponent = "acme-virt", "2.1", "compute"
		s.MonitorNamespace = "monitoring"
		s.Infra = &v1.ComponentConfig{Replicas: ptr(uint8(2)), NodePlacement: &v1.NodePlacement{
			NodeSelector: map[string]string{"node-role.kubernetes.io/control-plane": ""},
			Tolerations:  []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
		}}
		s.Workloads = &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{NodeSelector: map[string]string{"kubevirt.io/schedulable": "true"}}}
		s.CustomizeComponents = v1.CustomizeComponents{
			Patches: []v1.CustomizeComponentsPatch{{ResourceType: "Deployment", ResourceName: "virt-controller", Type: v1.StrategicMergePatchType,
				Patch: `{"spec":{"template":{"spec":{"priorityClassName":"system-cluster-critical"}}}}`}},
			Flags: &v1.Flags{Handler: map[string]string{"v": "4"}},
		}
		s.Configuration.MigrationConfiguration = &v1.MigrationConfiguration{Network: ptr("migration-net")}
	})
}

func TestCanonicalJSONIsWhatIsHashed(t *testing.T) {
	cfg := mustConfig(t, customizedKubeVirt(), withEnv(baseEnv(), "KV_IO_EXTRA_ENV_A", "x<y&z"))
	canonical := cfg.CanonicalJSON()
	sum := sha1.Sum(canonical) //nolint:gosec
	if hex.EncodeToString(sum[:]) != cfg.ID {
		t.Fatal("ID is not the SHA-1 of CanonicalJSON")
	}
	if strings.Contains(string(canonical), `"id"`) {
		t.Error("CanonicalJSON contains the id")
	}
	if !strings.Contains(string(canonical), `"x<y&z"`) {
		t.Errorf("CanonicalJSON escapes HTML: %s", canonical)
	}
	// Keys are sorted: "GsImage" < "PrHelperImage" < "additionalProperties" < ... < "workloads".
	s := string(canonical)
	order := []string{`"GsImage"`, `"additionalProperties"`, `"customizeComponents"`, `"infra"`, `"virtOperatorImage"`, `"workloads"`}
	for i := 1; i < len(order); i++ {
		if strings.Index(s, order[i-1]) > strings.Index(s, order[i]) || !strings.Contains(s, order[i]) {
			t.Errorf("%s comes after %s: keys are not sorted: %s", order[i-1], order[i], s)
		}
	}
}

func TestParseRoundTrip(t *testing.T) {
	cfg := mustConfig(t, customizedKubeVirt(), baseEnv())
	parsed, err := Parse(cfg.JSON())
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if parsed.ID != cfg.ID || parsed.JSON() != cfg.JSON() {
		t.Errorf("round trip changed the config:\n%s\n%s", cfg.JSON(), parsed.JSON())
	}
}

func TestParseRejects(t *testing.T) {
	good := mustConfig(t, newKubeVirt(), baseEnv()).JSON()
	tests := map[string]struct{ text, wantErr string }{
		"empty":          {"", "no config provided"},
		"not JSON":       {"{", "invalid JSON"},
		"trailing data":  {good + " {}", "unexpected data"},
		"no id":          {`{"namespace":"kubevirt"}`, "no id"},
		"unknown field":  {`{"id":"x","bogus":1}`, "unknown field"},
		"tampered":       {strings.Replace(good, `"kubevirt"`, `"other"`, 1), "does not match the content"},
		"invalid policy": {withID(`{"additionalProperties":{"ImagePullPolicy":"Sometimes"}}`), "imagePullPolicy"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse(tt.text); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Parse() error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// withID parses a config without id and returns its JSON with the matching id.
func withID(text string) string {
	cfg := &Config{}
	if err := jsonUnmarshal(text, cfg); err != nil {
		panic(err)
	}
	cfg.ID = cfg.ComputeID()
	return cfg.JSON()
}

func BenchmarkComputeID(b *testing.B) {
	cfg := mustConfig(b, customizedKubeVirt(), withEnv(baseEnv(), "KV_IO_EXTRA_ENV_A", "1", "VIRT_HANDLER_IMAGE", "h:1"))
	b.ReportAllocs()
	for b.Loop() {
		_ = cfg.ComputeID()
	}
}
