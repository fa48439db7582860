package apply_test

import (
	"testing"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

// BenchmarkPlanRelease plans v1.9.0's whole default strategy (its CRDs carry
// megabytes of schema) against a cluster that has none of it: what every
// reconcile of an install pays, and what the operator's memory peaks on.
func BenchmarkPlanRelease(b *testing.B) {
	kv := &v1.KubeVirt{}
	kv.Name, kv.Namespace = "kubevirt", "kubevirt"
	cfg, err := deployid.FromKubeVirt(kv, deployid.MapEnv{deployid.EnvVirtOperatorImage: "ghcr.io/virt-operator/virt-operator:devel"})
	if err != nil {
		b.Fatal(err)
	}
	s, err := generate.Generate(generate.Input{Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	desired := s.Objects()
	b.ReportAllocs()
	for b.Loop() {
		if actions := apply.Plan(desired, nil, nil); len(actions) != len(desired) {
			b.Fatalf("%d actions for %d objects", len(actions), len(desired))
		}
	}
}
