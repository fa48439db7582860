package generate

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// operatorEnv is the operator's environment in the tests: its own image, so the
// release comes from spec.imageTag or is the default one.
var operatorEnv = deployid.MapEnv{deployid.EnvVirtOperatorImage: "ghcr.io/virt-operator/virt-operator:devel"}

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

func tag(v string) func(*v1.KubeVirtSpec) { return func(s *v1.KubeVirtSpec) { s.ImageTag = v } }

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

func deployment(t *testing.T, s *strategy.Strategy, name string) *appsv1.Deployment {
	t.Helper()
	for _, d := range s.Deployments {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no Deployment %s", name)
	return nil
}

func handler(t *testing.T, s *strategy.Strategy) *corev1.PodSpec {
	t.Helper()
	if len(s.DaemonSets) != 1 {
		t.Fatalf("%d DaemonSets", len(s.DaemonSets))
	}
	return &s.DaemonSets[0].Spec.Template.Spec
}

func containerNames(spec *corev1.PodSpec) []string {
	var out []string
	for _, c := range spec.Containers {
		out = append(out, c.Name)
	}
	return out
}
