package workloadupdate

import (
	"fmt"
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Names on the objects the updater creates, as upstream spells them.
const (
	// WorkloadUpdateMigrationAnnotation marks a migration created by the updater (value "").
	WorkloadUpdateMigrationAnnotation = "kubevirt.io/workloadUpdateMigration"
	// VolumeUpdateMigrationLabel marks a migration driven by a volume change; the value
	// is the VMI name, or its UID when the name is longer than a label value may be.
	VolumeUpdateMigrationLabel = "kubevirt.io/volume-update-migration"
	// TestAbortionAnnotation on a VMI always aborts its workload-update migrations.
	TestAbortionAnnotation = "kubevirt.io/testWorkloadUpdateMigrationAbortion"
	// MigrationGenerateName prefixes the name of every workload-update migration.
	MigrationGenerateName = "kubevirt-workload-update-"
	// ChoiceKey, as a label or an annotation of a VMI (or its VM's template),
	// is the VM's own choice: LiveMigrate, Evict or None (never moved).
	ChoiceKey = "kubevirt.io/workload-update-method"
)

// Event reasons, as upstream.
const (
	ReasonSuccessfulCreate         = "SuccessfulCreate"
	ReasonFailedCreate             = "FailedCreate"
	ReasonSuccessfulEvict          = "SuccessfulEvict"
	ReasonFailedEvict              = "FailedEvict"
	ReasonSuccessfulChangeAbortion = "SuccessfulChangeAbortion"
	ReasonFailedChangeAbortion     = "FailedChangeAbortion"
	// ReasonFailedMigration: a workload-update migration failed; the VMI is retried.
	ReasonFailedMigration = "FailedMigration"
	// ReasonNeedsAttention: the VMI's migrations failed maxFailures times.
	ReasonNeedsAttention = "WorkloadUpdateNeedsAttention"
	// ReasonInvalidChoice: the VMI's ChoiceKey value means nothing.
	ReasonInvalidChoice = "InvalidWorkloadUpdateMethod"
	// ReasonNotMovable: no other node can take the VMI, and it may not be evicted.
	ReasonNotMovable = "WorkloadUpdateNotMovable"
)

// MessageNotMovable is the ReasonNotMovable event message on the VMI.
func MessageNotMovable(why string) string {
	return "The VMI stays on the old launcher: it cannot be live-migrated (" + why + ") and its update methods do not allow eviction; no migration is created"
}

// Hotplug condition types upstream also treats as "migration required".
const (
	VMIConditionHotVCPUChange   v1.VirtualMachineInstanceConditionType = "HotVCPUChange"
	VMIConditionHotMemoryChange v1.VirtualMachineInstanceConditionType = "HotMemoryChange"
)

// Defaults.
const (
	DefaultParallelMigrations    = 5
	DefaultMaxMigrationsPerNode  = 1
	DefaultRetryBackoff          = time.Minute
	DefaultMaxRetryBackoff       = 30 * time.Minute
	DefaultMaxFailures           = 3
	DefaultBatchEvictionSize     = 10
	DefaultBatchEvictionInterval = time.Minute
	// ResyncInterval is the periodic look while work remains: a real 30 s.
	ResyncInterval = 30 * time.Second
	// maxLabelValue is the longest Kubernetes label value.
	maxLabelValue = 63
)

// MessageCreatedMigrations is the SuccessfulCreate event message on the
// KubeVirt CR: one Event (a series) for every plan that created migrations.
func MessageCreatedMigrations() string {
	return "Created Migrations for automated workload update: each names its VMI, status.workloadUpdates.migrationsCreated counts them"
}

// MessageFailedCreate is the FailedCreate event message on the VMI.
func MessageFailedCreate(err error) string {
	return fmt.Sprintf("Error creating a Migration for automated workload update: %v", err)
}

// MessageEvicted is the SuccessfulEvict event message on the VMI.
func MessageEvicted() string {
	return "Initiated eviction of VMI as part of automated workload update"
}

// MessageFailedEvict is the FailedEvict event message when the eviction call fails.
func MessageFailedEvict(err error) string {
	return fmt.Sprintf("Error deleting VMI during automated workload update: %v", err)
}

// MessageNoLauncherPod is the FailedEvict event message when no launcher pod is found.
func MessageNoLauncherPod(err error) string {
	if err == nil {
		err = fmt.Errorf("no active launcher pod")
	}
	return fmt.Sprintf("Error detecting active pod for VMI during workload update: %v", err)
}

// MessageMigrationFailed is the FailedMigration event message on the VMI.
func MessageMigrationFailed(migrationName string) string {
	return fmt.Sprintf("Workload-update migration %s failed; the VMI stays outdated and is retried later", migrationName)
}

// MessageNeedsAttention is the ReasonNeedsAttention event message on the VMI.
func MessageNeedsAttention(failures int, evict bool) string {
	then := "it is not migrated again until its failed migrations are deleted"
	if evict {
		then = "it is evicted instead (evictAfterMaxFailures)"
	}
	return fmt.Sprintf("%d workload-update migrations failed since its last successful migration: %s", failures, then)
}

// MessageInvalidChoice is the ReasonInvalidChoice event message on the VMI.
func MessageInvalidChoice(value string) string {
	return fmt.Sprintf("%s=%q is not LiveMigrate, Evict or None: the VMI is left alone", ChoiceKey, value)
}

// MessageAborted is the SuccessfulChangeAbortion event message on the VMI.
func MessageAborted(vmiName string) string {
	return fmt.Sprintf("Aborted change for vmi: %s", vmiName)
}

// MessageFailedAbort is the FailedChangeAbortion event message on the VMI.
func MessageFailedAbort(vmiName string, err error) string {
	return fmt.Sprintf("Failed to abort change for vmi: %s: %v", vmiName, err)
}
