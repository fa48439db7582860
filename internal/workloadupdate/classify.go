package workloadupdate

import (
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Bucket is what the updater does with one VMI.
type Bucket string

const (
	// UpToDate: the VMI runs the target launcher and needs nothing.
	UpToDate Bucket = "UpToDate"
	// Migrate: create a workload-update migration for it.
	Migrate Bucket = "Migrate"
	// Evict: evict its launcher pod.
	Evict Bucket = "Evict"
	// Abort: delete its unfinished workload-update migrations.
	Abort Bucket = "Abort"
	// InFlight: outdated, but already migrating or targeted by an unfinished migration.
	InFlight Bucket = "InFlight"
	// Skip: nothing to do now (not running, launcher unknown, or no method applies).
	Skip Bucket = "Skip"
)

// Decision is the classification of one VMI.
type Decision struct {
	Bucket Bucket
	// Reason is a short human-readable why.
	Reason string
	// Outdated: the VMI counts towards the outdated total (an old launcher, or a
	// pending hotplug or volume change).
	Outdated bool
	// Priority of the migration to create (Migrate only).
	Priority v1.MigrationPriority
	// AbortMigrations are the migrations to delete (Abort only).
	AbortMigrations []*v1.VirtualMachineInstanceMigration
}

// Classify puts one VMI in exactly one bucket. inflight holds the unfinished
// migrations per VMI (Index.Unfinished); target is the current launcher image.
func Classify(vmi *v1.VirtualMachineInstance, target string,
	inflight map[Key][]*v1.VirtualMachineInstanceMigration, m Methods) Decision {
	if vmi.DeletionTimestamp != nil {
		return Decision{Bucket: Skip, Reason: "being deleted"}
	}
	if vmi.Status.Phase != v1.VMIRunning {
		return Decision{Bucket: Skip, Reason: "not running"}
	}
	unfinished := inflight[KeyOf(vmi)]
	image := vmi.Status.LauncherContainerImageVersion
	outdated := image != "" && image != target
	_, testAbort := vmi.Annotations[TestAbortionAnnotation]
	change := hotplugPending(vmi) || volumesChanging(vmi)

	if !outdated && !m.None() { // no method: no actions at all, aborts included
		if toAbort := abortable(unfinished); len(toAbort) > 0 {
			if shouldAbort(vmi, image, testAbort, change, unfinished) {
				return Decision{Bucket: Abort, Reason: "change no longer needed", AbortMigrations: toAbort}
			}
		}
	}
	needsChange := change && !testAbort
	if !outdated && !needsChange {
		if image == "" {
			return Decision{Bucket: Skip, Reason: "launcher image unknown"}
		}
		return Decision{Bucket: UpToDate, Reason: "runs the target launcher"}
	}
	d := Decision{Outdated: true}
	if migrating(vmi) || len(unfinished) > 0 {
		d.Bucket, d.Reason = InFlight, "already migrating"
		return d
	}
	if m.LiveMigrate && (isTrue(vmi, v1.VMIConditionLiveMigratable) || volumesChanging(vmi)) {
		d.Bucket, d.Reason, d.Priority = Migrate, "live-migratable", v1.PrioritySystemCritical
		if needsChange {
			d.Reason, d.Priority = "change pending", v1.PriorityUserTriggered
		}
		return d
	}
	if m.Evict {
		d.Bucket, d.Reason = Evict, "not live-migratable"
		return d
	}
	d.Bucket, d.Reason = Skip, "no allowed update method applies"
	return d
}

// shouldAbort: the VMI's workload-update migrations are no longer wanted. The
// test annotation always aborts; a pending change keeps them; an unknown launcher
// image is not a reason to abort (mid-migration it may be blank); past the point of
// no return they are left to finish.
func shouldAbort(vmi *v1.VirtualMachineInstance, image string, testAbort, change bool,
	unfinished []*v1.VirtualMachineInstanceMigration) bool {
	switch {
	case testAbort:
		return true
	case change, image == "":
		return false
	}
	return !pastPointOfNoReturn(vmi, unfinished)
}

// abortable are the unfinished workload-update migrations not already being deleted.
func abortable(unfinished []*v1.VirtualMachineInstanceMigration) []*v1.VirtualMachineInstanceMigration {
	var out []*v1.VirtualMachineInstanceMigration
	for _, m := range unfinished {
		if IsWorkloadUpdate(m) && m.DeletionTimestamp == nil {
			out = append(out, m)
		}
	}
	return out
}

// pastPointOfNoReturn: the VMI's or a migration's state reports the handover done.
func pastPointOfNoReturn(vmi *v1.VirtualMachineInstance, unfinished []*v1.VirtualMachineInstanceMigration) bool {
	done := func(s *v1.VirtualMachineInstanceMigrationState) bool {
		return s != nil && s.Completed && !s.Failed
	}
	for _, m := range unfinished {
		if done(m.Status.MigrationState) {
			return true
		}
		// The VMI's state describes its last migration: only trust it for this one.
		if s := vmi.Status.MigrationState; done(s) && (s.MigrationUID == "" || s.MigrationUID == m.UID) {
			return true
		}
	}
	return false
}

// migrating: the VMI's migration state shows a started, unended migration.
func migrating(vmi *v1.VirtualMachineInstance) bool {
	s := vmi.Status.MigrationState
	return s != nil && s.StartTimestamp != nil && s.EndTimestamp == nil && !s.Completed && !s.Failed
}

func hotplugPending(vmi *v1.VirtualMachineInstance) bool {
	return hasCondition(vmi, VMIConditionHotVCPUChange) ||
		isTrue(vmi, VMIConditionHotMemoryChange) ||
		isTrue(vmi, v1.VMIConditionMigrationRequired)
}

func volumesChanging(vmi *v1.VirtualMachineInstance) bool {
	return isTrue(vmi, v1.VMIConditionVolumesChange)
}

func hasCondition(vmi *v1.VirtualMachineInstance, t v1.VirtualMachineInstanceConditionType) bool {
	for _, c := range vmi.Status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}

func isTrue(vmi *v1.VirtualMachineInstance, t v1.VirtualMachineInstanceConditionType) bool {
	for _, c := range vmi.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
