package deployid

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func jsonUnmarshal(text string, v any) error { return json.Unmarshal([]byte(text), v) }

func TestChangedKeys(t *testing.T) {
	base := mustConfig(t, newKubeVirt(), baseEnv())
	tests := []struct {
		name string
		kv   *v1.KubeVirt
		env  MapEnv
		want []string
	}{
		{"nothing", newKubeVirt(), baseEnv(), nil},
		{"handler image", newKubeVirt(), withEnv(baseEnv(), "VIRT_HANDLER_IMAGE", "h"), []string{"virtHandlerImage"}},
		{"pull policy and patch", newKubeVirt(func(kv *v1.KubeVirt) {
			kv.Spec.ImagePullPolicy = corev1.PullAlways
			kv.Spec.CustomizeComponents.Patches = []v1.CustomizeComponentsPatch{{ResourceName: "*", ResourceType: "*", Type: v1.JSONPatchType, Patch: "[]"}}
		}), baseEnv(), []string{"additionalProperties.ImagePullPolicy", "customizeComponents.patches"}},
		{"tag of the same line", newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.ImageTag = "v1.9.1" }), baseEnv(), []string{"kubeVirtVersion"}},
		{"tag of a release the builtin generator does not know", newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.ImageTag = "v1.7.4" }), baseEnv(),
			// its own operator dumps it, and v1.8's gate rules (listed gates only, the
			// export proxy only with VMExport) apply
			[]string{"additionalProperties.ExportProxyDisabled", "additionalProperties.ExternalNetResourceInjection",
				"additionalProperties.VirtTemplateDeploymentEnabled", "kubeVirtVersion", "virtOperatorImage"}},
		{"infra placement", newKubeVirt(func(kv *v1.KubeVirt) {
			kv.Spec.Infra = &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{NodeSelector: map[string]string{"a": "b"}}}
		}), baseEnv(), []string{"infra.nodePlacement"}},
		{"pass-through", newKubeVirt(), withEnv(baseEnv(), "KV_IO_EXTRA_ENV_A", "1"), []string{"passthroughEnvVars.A"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ChangedKeys(base, mustConfig(t, tt.kv, tt.env)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ChangedKeys() = %v, want %v", got, tt.want)
			}
		})
	}
	if got := ChangedKeys(nil, &Config{Namespace: "x", ID: "ignored"}); !reflect.DeepEqual(got, []string{"namespace"}) {
		t.Errorf("ChangedKeys(nil, cfg) = %v", got)
	}
}
