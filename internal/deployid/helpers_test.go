package deployid

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// baseEnv is an operator environment as a release manifest sets it: a v1.9
// release, so the feature-gate rules are v1.9's (Beta gates on by default).
func baseEnv() MapEnv {
	return MapEnv{
		EnvVirtOperatorImage: "quay.io/kubevirt/virt-operator:v1.9.0",
		EnvKubeVirtVersion:   "v1.9.0",
	}
}

// newKubeVirt is a minimal KubeVirt in namespace kubevirt, edited by edits.
func newKubeVirt(edits ...func(*v1.KubeVirt)) *v1.KubeVirt {
	kv := &v1.KubeVirt{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "KubeVirt"},
		ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"},
	}
	for _, edit := range edits {
		edit(kv)
	}
	return kv
}

func mustConfig(t testing.TB, kv *v1.KubeVirt, env Env) *Config {
	t.Helper()
	cfg, err := FromKubeVirt(kv, env)
	if err != nil {
		t.Fatalf("FromKubeVirt: %v", err)
	}
	return cfg
}

// withEnv returns a copy of env with overrides applied.
func withEnv(env MapEnv, kv ...string) MapEnv {
	out := MapEnv{}
	for k, v := range env {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func ptr[T any](v T) *T { return &v }
