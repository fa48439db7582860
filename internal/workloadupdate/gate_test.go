package workloadupdate

import (
	"strings"
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

func TestUpstreamSettings(t *testing.T) {
	kv := kubevirt(v1.KubeVirtPhaseDeployed, "", "")
	s := UpstreamSettings(kv)
	if s.PerCluster != 5 || s.PerNode != 0 || s.BatchEvictionSize != 10 || s.BatchEvictionInterval != time.Minute ||
		!s.Methods.None() || s.Backoff != (Backoff{}) {
		t.Fatalf("defaults: %+v", s)
	}
	size, par := 30, uint32(7)
	kv.Spec.WorkloadUpdateStrategy = v1.KubeVirtWorkloadUpdateStrategy{
		WorkloadUpdateMethods: []v1.WorkloadUpdateMethod{"LiveMigrate", "Bogus", "Evict"},
		BatchEvictionSize:     &size,
		BatchEvictionInterval: &v1.Duration{Duration: 2 * time.Second},
	}
	kv.Spec.Configuration.MigrationConfiguration = &v1.MigrationConfiguration{ParallelMigrationsPerCluster: &par}
	s = UpstreamSettings(kv)
	if s.Methods != both || s.BatchEvictionSize != 30 || s.BatchEvictionInterval != 2*time.Second || clusterCap(s, 100) != 5 {
		t.Fatalf("custom: %+v", s)
	}
	par = 3
	if c := clusterCap(UpstreamSettings(kv), 100); c != 3 {
		t.Fatalf("parallelMigrationsPerCluster 3 bounds the cap: %d", c)
	}
	zero := uint32(0)
	kv.Spec.Configuration.MigrationConfiguration.ParallelMigrationsPerCluster = &zero
	in := inputs(many("vm", 3, oldImage, migratable), nil, both)
	in.Settings = UpstreamSettings(kv)
	if p := PlanUpdate(in); len(p.Migrate) != 0 {
		t.Fatalf("parallel 0 created %d migrations", len(p.Migrate))
	}
}

func TestSettingsFrom(t *testing.T) {
	kv := kubevirt(v1.KubeVirtPhaseDeployed, "", "")
	s := SettingsFrom(kv)
	if s.PerNode != 1 || s.PerCluster != 0 || s.BatchEvictionSize != 10 || s.BatchEvictionInterval != time.Minute ||
		!s.Methods.None() || !s.LastEvictionBatch.IsZero() || s.Backoff != DefaultBackoff() {
		t.Fatalf("defaults: %+v", s)
	}
	size := 30
	kv.Spec.WorkloadUpdateStrategy.BatchEvictionSize = &size // upstream's field is the fallback
	kv.Status.WorkloadUpdates = &v1.WorkloadUpdatesStatus{LastEvictionBatch: &metav1.Time{Time: t0}}
	kv.Spec.WorkloadUpdates = &v1.WorkloadUpdatePolicy{
		Methods:                 []v1.WorkloadUpdateMethod{"LiveMigrate"},
		MaxMigrationsPerNode:    ptr(int32(2)),
		MaxMigrationsPerCluster: ptr(int32(8)),
		BatchEvictionInterval:   &v1.Duration{Duration: 2 * time.Second},
		RetryBackoff:            &v1.Duration{Duration: time.Second},
		MaxRetryBackoff:         &v1.Duration{Duration: 4 * time.Second},
		MaxFailures:             ptr(int32(5)),
		EvictAfterMaxFailures:   true,
		Paused:                  true,
		Windows:                 []v1.MaintenanceWindow{{Start: "01:00", Duration: v1.Duration{Duration: time.Hour}}},
	}
	s = SettingsFrom(kv)
	want := Backoff{Initial: time.Second, Max: 4 * time.Second, MaxFailures: 5, EvictAfterMaxFailures: true}
	if s.Methods != (Methods{LiveMigrate: true}) || s.PerNode != 2 || s.PerCluster != 8 || s.BatchEvictionSize != 30 ||
		s.BatchEvictionInterval != 2*time.Second || s.Backoff != want || !s.Paused || len(s.Windows) != 1 ||
		!s.LastEvictionBatch.Equal(t0) {
		t.Fatalf("custom: %+v", s)
	}
	if s.Invalid != nil {
		t.Fatalf("valid settings: %v", s.Invalid)
	}
	// Durations stored under an older CRD that are not Go durations are named,
	// upstream's field too; the defaults stand in for them.
	kv.Spec.WorkloadUpdateStrategy.BatchEvictionInterval = &v1.Duration{Invalid: `"1 minute"`}
	kv.Spec.WorkloadUpdates.BatchEvictionInterval = &v1.Duration{Invalid: `"9999999999h"`}
	kv.Spec.WorkloadUpdates.MaxRetryBackoff = &v1.Duration{Invalid: `""`}
	s = SettingsFrom(kv)
	for _, want := range []string{`spec.workloadUpdateStrategy.batchEvictionInterval: "1 minute"`,
		`spec.workloadUpdates.batchEvictionInterval: "9999999999h"`, `spec.workloadUpdates.maxRetryBackoff: ""`} {
		if s.Invalid == nil || !strings.Contains(s.Invalid.Error(), want) {
			t.Errorf("Invalid is %v, want it to name %s", s.Invalid, want)
		}
	}
	if s.BatchEvictionInterval != DefaultBatchEvictionInterval || s.Backoff.Max != DefaultBackoff().Max {
		t.Errorf("invalid values read as %v and %v", s.BatchEvictionInterval, s.Backoff.Max)
	}
	kv.Status.WorkloadUpdates.LastEvictionBatch = nil
	if !LastEvictionBatch(kv).IsZero() {
		t.Fatal("no recorded batch must read as never")
	}
}

func ptr[T any](v T) *T { return &v }

func TestActorOf(t *testing.T) {
	live := []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate}
	cases := []struct {
		name     string
		upstream []v1.WorkloadUpdateMethod
		ours     *v1.WorkloadUpdatePolicy
		want     v1.WorkloadUpdateActor
		ignored  bool
	}{
		{"nothing listed", nil, nil, v1.ActorNone, false},
		{"upstream's field: virt-controller", live, nil, v1.ActorVirtController, false},
		{"ours: virt-operator", nil, &v1.WorkloadUpdatePolicy{Methods: live}, v1.ActorVirtOperator, false},
		{"ours without methods: none", nil, &v1.WorkloadUpdatePolicy{Paused: true}, v1.ActorNone, false},
		{"both (an old CR): virt-controller, ours ignored", live, &v1.WorkloadUpdatePolicy{Methods: live}, v1.ActorVirtController, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kv := &v1.KubeVirt{}
			kv.Spec.WorkloadUpdateStrategy.WorkloadUpdateMethods, kv.Spec.WorkloadUpdates = c.upstream, c.ours
			got, ignored := ActorOf(kv)
			if got != c.want || (ignored != "") != c.ignored {
				t.Fatalf("ActorOf = %s %q, want %s (ignored %v)", got, ignored, c.want, c.ignored)
			}
		})
	}
}
