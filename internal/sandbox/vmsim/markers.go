package vmsim

import (
	"time"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// Markers a test puts on a VMI (or a VM template), or on a migration, to steer
// the simulator.
const (
	// NonMigratableLabel=true makes a VMI report LiveMigratable=False (reason
	// NotMigratableReason); migrations of it fail.
	NonMigratableLabel = "sandbox.virt-operator.io/non-migratable"
	// FailMigrationsAnnotation="N" makes the VMI's next N migrations fail at their end
	// time; the simulator counts it down and removes it at 0.
	FailMigrationsAnnotation = "sandbox.virt-operator.io/fail-migrations"
	// NodeAnnotation="NAME" starts the VMI's first launcher pod on node NAME (a
	// migration's target pod goes anywhere): tests pack VMIs unevenly with it.
	NodeAnnotation = "sandbox.virt-operator.io/node"
	// TargetNodeAnnotation="NAME" on a migration of a podless VMI moves it to
	// node NAME, when NAME is a sandbox node other than its source: a benchmark's
	// drain keeps the VMIs' spread with it.
	TargetNodeAnnotation = "sandbox.virt-operator.io/target-node"
	// HoldMigrationAnnotation="true" on a migration keeps it Running past its
	// duration until the annotation is removed; it then ends as it would have
	// (its duration counted from its start): a test that needs a migration under
	// way while something else happens holds it for exactly as long as that
	// takes, instead of guessing a duration that outlasts it on a slow machine.
	HoldMigrationAnnotation = "sandbox.virt-operator.io/hold"
	// NoMigrateSuffix ending the image tag of a node's virt-handler pod makes
	// every migration into that node fail (failureReason says why), while the
	// pod stays Ready: a data plane broken behind healthy probes, as
	// "-crashloop" makes a container crash.
	NoMigrateSuffix = "-nomigrate"
)

// Bookkeeping the simulator writes, so that its decisions survive a restart.
const (
	// FailedMigrationAnnotation on a VMI holds the UID of the migration that took the
	// last count of FailMigrationsAnnotation: written in the same update as the
	// decrement, it makes the failure decision exactly-once.
	FailedMigrationAnnotation = "sandbox.virt-operator.io/failed-migration"
	// MigrationAnnotation on a target pod names its migration (the pod is indexed by
	// it, so a deleted migration finds its pod).
	MigrationAnnotation = "sandbox.virt-operator.io/migration"
	// MigrationStartAnnotation on a target pod is when the simulator first acted on
	// the migration (RFC 3339, nanoseconds): creationTimestamp has whole seconds only.
	MigrationStartAnnotation = "sandbox.virt-operator.io/migration-start"
	// SourcePodAnnotation on a target pod names the pod the VMI migrates from.
	SourcePodAnnotation = "sandbox.virt-operator.io/source-pod"
)

// KubeVirt's own labels, as virt-controller puts them on launcher pods.
const (
	AppLabel            = metadata.AppLabel
	LauncherApp         = metadata.LauncherApp
	HandlerApp          = "virt-handler"
	ControllerApp       = "virt-controller"
	CreatedByLabel      = metadata.CreatedByLabel
	VMNameLabel         = "vm.kubevirt.io/name"
	MigrationJobLabel   = "kubevirt.io/migrationJobUID"
	ComputeContainer    = "compute"
	LauncherImageFlag   = "--launcher-image"
	NotMigratableReason = "NotMigratable"
)

// Defaults of Options.
const (
	DefaultLauncherImage     = "quay.io/kubevirt/virt-launcher:sandbox"
	DefaultMigrationDuration = time.Second
)
