package workloadupdate

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func kubevirt(p v1.KubeVirtPhase, observed, target string) *v1.KubeVirt {
	kv := &v1.KubeVirt{}
	kv.Status.Phase, kv.Status.ObservedDeploymentID, kv.Status.TargetDeploymentID = p, observed, target
	return kv
}

func TestGate(t *testing.T) {
	cases := []struct {
		name string
		kv   *v1.KubeVirt
		ok   bool
	}{
		{"deployed with empty equal IDs", kubevirt(v1.KubeVirtPhaseDeployed, "", ""), true},
		{"deployed and observed == target", kubevirt(v1.KubeVirtPhaseDeployed, "id1", "id1"), true},
		{"deployment updating", kubevirt(v1.KubeVirtPhaseDeployed, "id1", "id2"), false},
		{"deploying", kubevirt(v1.KubeVirtPhaseDeploying, "id1", "id1"), false},
		{"deleting", kubevirt(v1.KubeVirtPhaseDeleting, "id1", "id1"), false},
		{"no CR", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, reason := Gate(c.kv)
			if ok != c.ok || (ok == (reason != "")) {
				t.Fatalf("Gate = %v %q, want %v", ok, reason, c.ok)
			}
		})
	}
}

func TestSettingsFrom(t *testing.T) {
	kv := kubevirt(v1.KubeVirtPhaseDeployed, "", "")
	s := SettingsFrom(kv)
	if s.ParallelMigrations != 5 || s.BatchEvictionSize != 10 || s.BatchEvictionInterval != time.Minute ||
		!s.Methods.None() || !s.LastEvictionBatch.IsZero() {
		t.Fatalf("defaults: %+v", s)
	}
	size, par := 30, uint32(7)
	kv.Spec.WorkloadUpdateStrategy = v1.KubeVirtWorkloadUpdateStrategy{
		WorkloadUpdateMethods: []v1.WorkloadUpdateMethod{"LiveMigrate", "Bogus", "Evict"},
		BatchEvictionSize:     &size,
		BatchEvictionInterval: &metav1.Duration{Duration: 2 * time.Second},
	}
	kv.Spec.Configuration.MigrationConfiguration = &v1.MigrationConfiguration{ParallelMigrationsPerCluster: &par}
	kv.Status.WorkloadUpdates = &v1.WorkloadUpdatesStatus{LastEvictionBatch: &metav1.Time{Time: t0}}
	s = SettingsFrom(kv)
	if s.Methods != both || s.BatchEvictionSize != 30 || s.BatchEvictionInterval != 2*time.Second ||
		s.ParallelMigrations != 7 || !s.LastEvictionBatch.Equal(t0) {
		t.Fatalf("custom: %+v", s)
	}
	kv.Status.WorkloadUpdates.LastEvictionBatch = nil
	if !LastEvictionBatch(kv).IsZero() {
		t.Fatal("no recorded batch must read as never")
	}
	zero := uint32(0)
	kv.Spec.Configuration.MigrationConfiguration.ParallelMigrationsPerCluster = &zero
	in := inputs(many("vm", 3, oldImage, migratable), nil, both)
	in.ParallelMigrations = SettingsFrom(kv).ParallelMigrations
	if p := PlanUpdate(in); len(p.Migrate) != 0 {
		t.Fatalf("parallel 0 created %d migrations", len(p.Migrate))
	}
}
