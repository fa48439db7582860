package workloadupdate

import (
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
	AbortMigrations []*Migration
}

// Classify puts one VMI in exactly one bucket. unfinished are the VMI's
// unfinished migrations; target is the current launcher image.
func Classify(vmi *VMI, target string, unfinished []*Migration, m Methods) Decision {
	if vmi.Has(Deleting) {
		return Decision{Bucket: Skip, Reason: "being deleted"}
	}
	if vmi.Phase != v1.VMIRunning {
		return Decision{Bucket: Skip, Reason: "not running"}
	}
	image := vmi.Launcher
	outdated := image != "" && image != target
	testAbort := vmi.Has(TestAbort)
	change := hotplugPending(vmi) || vmi.Has(VolumesChange)

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
	if m.LiveMigrate && (vmi.Has(LiveMigratable) || vmi.Has(VolumesChange)) {
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
func shouldAbort(vmi *VMI, image string, testAbort, change bool, unfinished []*Migration) bool {
	switch {
	case testAbort:
		return true
	case change, image == "":
		return false
	}
	return !pastPointOfNoReturn(vmi, unfinished)
}

// abortable are the unfinished workload-update migrations not already being deleted.
func abortable(unfinished []*Migration) []*Migration {
	var out []*Migration
	for _, m := range unfinished {
		if m.WorkloadUpdate && !m.Deleting {
			out = append(out, m)
		}
	}
	return out
}

// pastPointOfNoReturn: the VMI's or a migration's state reports the handover done.
func pastPointOfNoReturn(vmi *VMI, unfinished []*Migration) bool {
	done := func(s *MigrationState) bool {
		return s != nil && s.Completed && !s.Failed
	}
	for _, m := range unfinished {
		if done(m.State) {
			return true
		}
		// The VMI's state describes its last migration: only trust it for this one.
		if s := vmi.Migration; done(s) && (s.UID == "" || s.UID == m.UID) {
			return true
		}
	}
	return false
}

// migrating: the VMI's migration state shows a started, unended migration.
func migrating(vmi *VMI) bool {
	s := vmi.Migration
	return s != nil && s.Started != 0 && s.Ended == 0 && !s.Completed && !s.Failed
}

// hotplugPending: a CPU or memory hotplug waits for a migration.
func hotplugPending(vmi *VMI) bool {
	return vmi.Has(HotVCPUChange) || vmi.Has(HotMemoryChange) || vmi.Has(MigrationRequired)
}
