package workloadupdate

import (
	"errors"
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Settings are what the planner is told to do: the methods, the pacing, the
// backoff and the times new moves may start.
type Settings struct {
	Methods Methods
	// PerNode caps the outbound migrations of one source node; 0 means no cap
	// (upstream's updater has none).
	PerNode int
	// PerCluster caps the migrations in the cluster; 0 means the default: the
	// nodes running outdated VMIs times PerNode, or DefaultParallelMigrations
	// without a per-node cap.
	PerCluster int
	// ParallelMigrations is parallelMigrationsPerCluster, which bounds PerCluster;
	// 0 means unset, negative an explicit 0 (no migrations).
	ParallelMigrations    int
	BatchEvictionSize     int
	BatchEvictionInterval time.Duration
	Backoff               Backoff
	Paused                bool
	Windows               []v1.MaintenanceWindow
	// LastEvictionBatch is read from the CR's status; zero means never.
	LastEvictionBatch time.Time
	// Invalid names the settings that cannot be read: a duration stored under an
	// older CRD that is not a Go duration. Nothing new starts while it is set (a
	// setting is never read as its default behind the admin's back).
	Invalid error
}

// SettingsFrom reads the settings of this operator's updater from
// spec.workloadUpdates, with upstream's eviction fields as fallbacks.
func SettingsFrom(kv *v1.KubeVirt) Settings {
	s := Settings{
		PerNode:               DefaultMaxMigrationsPerNode,
		BatchEvictionSize:     DefaultBatchEvictionSize,
		BatchEvictionInterval: DefaultBatchEvictionInterval,
		Backoff:               DefaultBackoff(),
	}
	if kv == nil {
		return s
	}
	readUpstreamEviction(kv, &s)
	s.ParallelMigrations = parallelMigrations(kv)
	s.LastEvictionBatch = LastEvictionBatch(kv)
	p := kv.Spec.WorkloadUpdates
	if p == nil {
		return s
	}
	s.Methods = MethodsFrom(p.Methods)
	s.Paused, s.Windows = p.Paused, p.Windows
	setPositive(&s.PerNode, p.MaxMigrationsPerNode)
	setPositive(&s.PerCluster, p.MaxMigrationsPerCluster)
	setPositive(&s.BatchEvictionSize, p.BatchEvictionSize)
	s.Invalid = errors.Join(s.Invalid, p.BatchEvictionInterval.Check("spec.workloadUpdates.batchEvictionInterval"),
		p.RetryBackoff.Check("spec.workloadUpdates.retryBackoff"), p.MaxRetryBackoff.Check("spec.workloadUpdates.maxRetryBackoff"))
	if p.BatchEvictionInterval != nil && p.BatchEvictionInterval.Duration > 0 {
		s.BatchEvictionInterval = p.BatchEvictionInterval.Duration
	}
	if p.RetryBackoff != nil && p.RetryBackoff.Duration > 0 {
		s.Backoff.Initial = p.RetryBackoff.Duration
	}
	if p.MaxRetryBackoff != nil && p.MaxRetryBackoff.Duration > 0 {
		s.Backoff.Max = p.MaxRetryBackoff.Duration
	}
	setPositive(&s.Backoff.MaxFailures, p.MaxFailures)
	s.Backoff.EvictAfterMaxFailures = p.EvictAfterMaxFailures
	return s
}

// UpstreamSettings are upstream virt-controller's: the methods of
// spec.workloadUpdateStrategy, parallelMigrationsPerCluster (default 5) as the
// only cap, no backoff, no choices, no windows. The sandbox's VM simulator plays
// upstream's updater with them.
func UpstreamSettings(kv *v1.KubeVirt) Settings {
	s := Settings{
		PerCluster:            DefaultParallelMigrations,
		BatchEvictionSize:     DefaultBatchEvictionSize,
		BatchEvictionInterval: DefaultBatchEvictionInterval,
	}
	if kv == nil {
		return s
	}
	s.Methods = MethodsFrom(kv.Spec.WorkloadUpdateStrategy.WorkloadUpdateMethods)
	readUpstreamEviction(kv, &s)
	s.ParallelMigrations = parallelMigrations(kv)
	return s
}

func readUpstreamEviction(kv *v1.KubeVirt, s *Settings) {
	w := kv.Spec.WorkloadUpdateStrategy
	if w.BatchEvictionSize != nil && *w.BatchEvictionSize > 0 {
		s.BatchEvictionSize = *w.BatchEvictionSize
	}
	if w.BatchEvictionInterval != nil && w.BatchEvictionInterval.Duration > 0 {
		s.BatchEvictionInterval = w.BatchEvictionInterval.Duration
	}
	s.Invalid = errors.Join(s.Invalid, w.BatchEvictionInterval.Check("spec.workloadUpdateStrategy.batchEvictionInterval"))
}

// parallelMigrations is parallelMigrationsPerCluster: 0 unset, -1 an explicit 0.
func parallelMigrations(kv *v1.KubeVirt) int {
	mc := kv.Spec.Configuration.MigrationConfiguration
	if mc == nil || mc.ParallelMigrationsPerCluster == nil {
		return 0
	}
	if *mc.ParallelMigrationsPerCluster == 0 {
		return -1
	}
	return int(*mc.ParallelMigrationsPerCluster)
}

func setPositive[T int32 | int](dst *int, v *T) {
	if v != nil && *v > 0 {
		*dst = int(*v)
	}
}

// LastEvictionBatch is status.workloadUpdates.lastEvictionBatch; zero means never.
func LastEvictionBatch(kv *v1.KubeVirt) time.Time {
	if kv == nil || kv.Status.WorkloadUpdates == nil || kv.Status.WorkloadUpdates.LastEvictionBatch == nil {
		return time.Time{}
	}
	return kv.Status.WorkloadUpdates.LastEvictionBatch.Time
}

// ActorOf is who moves the CR's outdated VMs. Upstream's field wins: its
// virt-controller acts on it whatever else the CR says, so this operator must
// not act beside it. ignored names spec.workloadUpdates when it is set but
// cannot take effect for that reason (the CRD refuses such a CR; an older one may
// hold it).
func ActorOf(kv *v1.KubeVirt) (actor v1.WorkloadUpdateActor, ignored string) {
	upstream := len(kv.Spec.WorkloadUpdateStrategy.WorkloadUpdateMethods) > 0
	ours := kv.Spec.WorkloadUpdates
	switch {
	case upstream && ours != nil:
		return v1.ActorVirtController, "spec.workloadUpdates is ignored: spec.workloadUpdateStrategy.workloadUpdateMethods lists a method, so virt-controller moves the VMs"
	case upstream:
		return v1.ActorVirtController, ""
	case ours != nil && len(ours.Methods) > 0:
		return v1.ActorVirtOperator, ""
	}
	return v1.ActorNone, ""
}
