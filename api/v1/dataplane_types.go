package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// HandlerDataPlaneChecks are the checks a virt-handler canary must pass, after
// its bake and before the rollout widens, to show that it can run VMs and not
// only answer its probes. A failed check is a failed canary: the rollout rolls
// back as for a crash. Each check is off unless set.
type HandlerDataPlaneChecks struct {
	// CanaryVMIs: the VMIs running on the canary nodes when the canary begins
	// must stay there through the bake and the other checks: none Failed, none
	// gone from its node but by a completed live migration (a VMI deleted or
	// restarted by its VM meanwhile counts as lost; one whose guest shut down,
	// Succeeded, does not).
	CanaryVMIs bool `json:"canaryVMIs,omitempty"`
	// CanaryPod: from the end of the bake until the checks end the canary pod
	// stays Ready (not Ready fails the check, where without it the bake would
	// start again) with no restart, and its node is not marked
	// kubevirt.io/schedulable=false.
	CanaryPod bool `json:"canaryPod,omitempty"`
	// MigrationProbe live-migrates one VMI the admin selects onto the canary
	// node and off it; both must succeed within its timeout.
	MigrationProbe *HandlerMigrationProbe `json:"migrationProbe,omitempty"`
}

// HandlerMigrationProbe is the migration probe: which VMIs it may move, how
// long it may take, and what to do when none can be moved.
type HandlerMigrationProbe struct {
	// VMISelector selects the VMIs, in any namespace, the probe may move. It
	// must select something: an empty selector would move any VM, and the
	// probe moves only what the admin names. Of those, a VMI is moved only when
	// it is Running, live-migratable, not migrating, not opted out of moves
	// (kubevirt.io/workload-update-method None or Evict), and both its node and
	// the canary node are free of other migrations.
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="must select something: name the VMs the probe may move with matchLabels or matchExpressions (an empty selector would move any VM)"
	VMISelector metav1.LabelSelector `json:"vmiSelector"`
	// Timeout is how long the probe's migrations may take, from the first one's
	// creation to the last one's success (default 5m), a Go duration.
	Timeout *Duration `json:"timeout,omitempty"`
	// WhenNoneEligible is what the probe does while no selected VMI can be
	// moved: Hold (the default) waits, saying why, until one can; Pass lets
	// the rollout widen without the probe, saying so.
	// +kubebuilder:validation:Enum=Hold;Pass
	WhenNoneEligible ProbeNoneEligible `json:"whenNoneEligible,omitempty"`
}

// ProbeNoneEligible is what the migration probe does with nothing to move.
type ProbeNoneEligible string

const (
	// ProbeHold waits until a selected VMI can be moved.
	ProbeHold ProbeNoneEligible = "Hold"
	// ProbePass passes the check without a migration.
	ProbePass ProbeNoneEligible = "Pass"
)

// HandlerDataPlaneCheck is one data-plane check of a rollout.
type HandlerDataPlaneCheck struct {
	// Name: CanaryVMIs, CanaryPod or MigrationProbe.
	Name string `json:"name"`
	// State: Pending, Running, Holding (the probe waits for a VMI it can
	// move), Passed, Skipped (nothing eligible, passed as whenNoneEligible
	// asks) or Failed.
	State string `json:"state"`
	// VMI is the VMI the check is about, namespace/name: the one it failed on,
	// or the one the probe moves.
	VMI string `json:"vmi,omitempty"`
	// Message says what the check saw, or why it failed.
	Message string `json:"message,omitempty"`
	// StartedAt is when the check began judging.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// Deadline is when the check fails if it has not passed by then (the
	// migration probe's timeout, once its first migration is created).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	Deadline *metav1.Time `json:"deadline,omitempty"`
	// FinishedAt is when it passed, was skipped or failed.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}

// HandlerWatchedVMI is a VMI the canaryVMIs check watches.
type HandlerWatchedVMI struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
	// Node is the canary node it ran on when the canary began.
	Node string `json:"node"`
}

// HandlerMigrationProbeStatus is where the migration probe stands.
type HandlerMigrationProbeStatus struct {
	// VMI is the VMI the probe moves, namespace/name, and VMIUID its UID.
	VMI    string    `json:"vmi"`
	VMIUID types.UID `json:"vmiUID,omitempty"`
	// Node is the canary node the probe moves it onto and off.
	Node string `json:"node"`
	// Moves are the probe's migrations, in order: Off then Onto for a VMI
	// that ran on the canary node, Onto, Off and Onto for one elsewhere, so
	// the VMI ends on the canary node either way.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=3
	Moves []HandlerProbeMove `json:"moves,omitempty"`
}

// HandlerProbeMove is one migration of the probe.
type HandlerProbeMove struct {
	// Direction: Onto (to the canary node) or Off (from it).
	Direction string `json:"direction"`
	// Migration is the VirtualMachineInstanceMigration's name, in the VMI's
	// namespace; empty until it is created.
	Migration string `json:"migration,omitempty"`
	// Phase is the migration's phase when last seen.
	Phase string `json:"phase,omitempty"`
	// CreatedAt is when the operator created it.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	CreatedAt *metav1.Time `json:"createdAt,omitempty"`
	// From and To are the nodes it moved the VMI from and to, once known.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}
