package generate

import (
	"testing"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// operatorEnv is the operator's environment in the tests.
var operatorEnv = deployid.MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.7.0"}

// config is the deployment config of a KubeVirt in namespace kubevirt with the
// given spec edits, under env (operatorEnv when nil).
func config(t testing.TB, env deployid.MapEnv, edits ...func(*v1.KubeVirtSpec)) *deployid.Config {
	t.Helper()
	if env == nil {
		env = operatorEnv
	}
	kv := &v1.KubeVirt{}
	kv.Name, kv.Namespace = "kubevirt", "kubevirt"
	for _, e := range edits {
		e(&kv.Spec)
	}
	cfg, err := deployid.FromKubeVirt(kv, env)
	if err != nil {
		t.Fatalf("deployment config: %v", err)
	}
	return cfg
}

func mustGenerate(t testing.TB, in Input) *strategy.Strategy {
	t.Helper()
	s, err := Generate(in)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return s
}

func gates(on ...string) func(*v1.KubeVirtSpec) {
	return func(s *v1.KubeVirtSpec) {
		if s.Configuration.DeveloperConfiguration == nil {
			s.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{}
		}
		s.Configuration.DeveloperConfiguration.FeatureGates = append(s.Configuration.DeveloperConfiguration.FeatureGates, on...)
	}
}

func disabledGates(off ...string) func(*v1.KubeVirtSpec) {
	return func(s *v1.KubeVirtSpec) {
		if s.Configuration.DeveloperConfiguration == nil {
			s.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{}
		}
		s.Configuration.DeveloperConfiguration.DisabledFeatureGates = append(s.Configuration.DeveloperConfiguration.DisabledFeatureGates, off...)
	}
}
