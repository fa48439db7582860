package deployid

import (
	"encoding/json"
	"strings"
	"testing"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// The Job hands any release's operator the config in upstream's shape: upstream's
// fields only, presence keys as "", our own inputs left out; ParseUpstream reads it
// back to the config the strategy depends on, with the id as given.
func TestUpstreamJSONRoundTrip(t *testing.T) {
	kv := newKubeVirt(func(kv *v1.KubeVirt) {
		kv.Spec.ImagePullPolicy = "Always"
		kv.Spec.CustomizeComponents.Patches = []v1.CustomizeComponentsPatch{{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.MergePatchType, Patch: "{}"}}
		kv.Spec.Infra = &v1.ComponentConfig{Replicas: ptr(uint8(3))}
		devConfig(&kv.Spec).FeatureGates = []string{GateContainerPathVolumes, GatePlugins}
	})
	cfg := mustConfig(t, kv, withEnv(baseEnv(), "KV_IO_EXTRA_ENV_A", "1"))
	raw := cfg.UpstreamJSON()
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	for _, ours := range []string{"customizeComponents", "infra", "workloads"} {
		if _, ok := m[ours]; ok {
			t.Errorf("upstream's shape carries %s: %s", ours, raw)
		}
	}
	props := m["additionalProperties"].(map[string]any)
	if props[KeyPluginsEnabled] != "" || props[KeyImagePullPolicy] != "Always" || props[KeyVirtTemplateDeploymentEnabled] != "" {
		t.Errorf("presence keys are upstream's \"\", values kept: %v", props)
	}
	if _, ok := props[KeyContainerPathVolumesEnabled]; ok {
		t.Errorf("a key of ours is in upstream's shape: %v", props)
	}
	back, err := ParseUpstream(raw)
	if err != nil {
		t.Fatal(err)
	}
	if back.ID != cfg.ID || !back.PluginsEnabled() || !back.VirtTemplateDeploymentEnabled() || back.ImagePullPolicy() != "Always" ||
		back.PassthroughEnvVars["A"] != "1" || back.Image(API) != cfg.Image(API) || back.CustomizeComponents != nil {
		t.Errorf("parsed back: %s", back.JSON())
	}
}

func TestParseUpstreamErrors(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{"", "no config provided"},
		{"{", "invalid JSON"},
		{`{"namespace":"kubevirt"}`, "no id"},
		{`{"id":"x","additionalProperties":{"SynchronizationPort":"0"}}`, "synchronizationPort"},
	} {
		if _, err := ParseUpstream(tc.json); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseUpstream(%q) = %v, want an error containing %q", tc.json, err, tc.want)
		}
	}
}
