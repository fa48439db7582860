package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkloadUpdatePolicy configures virt-operator's own workload updater (not in
// upstream's API). Upstream's virt-controller moves VMs whenever
// spec.workloadUpdateStrategy.workloadUpdateMethods lists a method, and it has no
// switch; so this policy may only be set while that list is empty, and then
// virt-operator is the one actor that moves VMs.
type WorkloadUpdatePolicy struct {
	// Methods allowed, as upstream's workloadUpdateMethods; empty moves nothing
	// (outdated VMIs are still counted).
	// +listType=set
	Methods []WorkloadUpdateMethod `json:"methods,omitempty"`
	// MaxMigrationsPerNode caps the outbound workload-update migrations of one
	// source node (default 1).
	// +kubebuilder:validation:Minimum=1
	MaxMigrationsPerNode *int32 `json:"maxMigrationsPerNode,omitempty"`
	// MaxMigrationsPerCluster caps them in the cluster. Default: the number of
	// nodes running outdated VMIs. Either way at most
	// spec.configuration.migrations.parallelMigrationsPerCluster when that is set.
	// +kubebuilder:validation:Minimum=1
	MaxMigrationsPerCluster *int32 `json:"maxMigrationsPerCluster,omitempty"`
	// BatchEvictionSize is how many VMIs are evicted per interval (default
	// workloadUpdateStrategy.batchEvictionSize, else 10).
	// +kubebuilder:validation:Minimum=1
	BatchEvictionSize *int32 `json:"batchEvictionSize,omitempty"`
	// BatchEvictionInterval is the time between eviction batches (default
	// workloadUpdateStrategy.batchEvictionInterval, else 1m), a Go duration.
	BatchEvictionInterval *Duration `json:"batchEvictionInterval,omitempty"`
	// RetryBackoff is the wait after a VMI's first failed migration; it doubles
	// with each further failure up to MaxRetryBackoff (defaults 1m and 30m).
	RetryBackoff    *Duration `json:"retryBackoff,omitempty"`
	MaxRetryBackoff *Duration `json:"maxRetryBackoff,omitempty"`
	// MaxFailures is how many failed migrations since its last successful one make
	// a VMI "needs attention": it is not migrated again (default 3). At most 5:
	// KubeVirt keeps the last 5 finished migrations of a VMI, and the count is
	// read from them.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	MaxFailures *int32 `json:"maxFailures,omitempty"`
	// EvictAfterMaxFailures evicts (restarts) a VMI that needs attention, unless
	// its workload-update choice is LiveMigrate.
	EvictAfterMaxFailures bool `json:"evictAfterMaxFailures,omitempty"`
	// Paused starts nothing new; migrations in flight finish.
	Paused bool `json:"paused,omitempty"`
	// Windows are the times new moves may start; none means any time. Outside
	// them migrations in flight finish and nothing new starts.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Windows []MaintenanceWindow `json:"windows,omitempty"`
}

// Weekday is a day of the week, as Go's time package spells it.
// +kubebuilder:validation:Enum=Monday;Tuesday;Wednesday;Thursday;Friday;Saturday;Sunday
type Weekday string

// MaintenanceWindow opens at Start on each of Days in TimeZone for Duration.
type MaintenanceWindow struct {
	// Days it opens on; empty means every day.
	// +listType=set
	Days []Weekday `json:"days,omitempty"`
	// Start is the local opening time, HH:MM (24 hours).
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	Start string `json:"start"`
	// Duration it stays open, a Go duration of at most 7 days.
	Duration Duration `json:"duration"`
	// TimeZone is an IANA name such as Europe/Berlin (default UTC).
	TimeZone string `json:"timeZone,omitempty"`
}

// WorkloadUpdateActor is who moves outdated VMs for a KubeVirt CR.
type WorkloadUpdateActor string

const (
	// ActorVirtController: upstream's virt-controller (workloadUpdateStrategy lists a method).
	ActorVirtController WorkloadUpdateActor = "virt-controller"
	// ActorVirtOperator: this operator's updater (spec.workloadUpdates lists a method).
	ActorVirtOperator WorkloadUpdateActor = "virt-operator"
	// ActorNone: no method is listed anywhere; VMs move only when someone moves them.
	ActorNone WorkloadUpdateActor = "none"
)

// WorkloadUpdateChoices counts outdated VMIs by how they are to be moved.
type WorkloadUpdateChoices struct {
	LiveMigrate int `json:"liveMigrate"`
	Evict       int `json:"evict"`
	// Leave are VMIs whose owner asked that they are never moved.
	Leave int `json:"leave"`
	// Invalid are VMIs with a choice value that means nothing; they are left alone.
	Invalid int `json:"invalid,omitempty"`
}

// WorkloadUpdateWindowStatus is whether new moves may start now.
type WorkloadUpdateWindowStatus struct {
	Open bool `json:"open"`
	// NextOpen is when the next window opens (set while closed).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	NextOpen *metav1.Time `json:"nextOpen,omitempty"`
	// Error names a window that cannot be read (it never opens).
	Error string `json:"error,omitempty"`
}
