package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// VirtualMachineInstance is a running virtual machine. The operator reads the
// status fields its workload updater needs; the rest of the upstream schema is
// preserved as written.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=vmi;vmis,categories=all
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="NodeName",type=string,JSONPath=`.status.nodeName`
type VirtualMachineInstance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is kept opaque: the operator never interprets it.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Spec   runtime.RawExtension         `json:"spec,omitempty"`
	Status VirtualMachineInstanceStatus `json:"status,omitempty"`
}

// VirtualMachineInstanceList is a list of VirtualMachineInstance.
//
// +kubebuilder:object:root=true
type VirtualMachineInstanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VirtualMachineInstance `json:"items"`
}

// VirtualMachineInstancePhase is a VMI's lifecycle phase.
type VirtualMachineInstancePhase string

const (
	VMIPhaseUnset      VirtualMachineInstancePhase = ""
	VMIPending         VirtualMachineInstancePhase = "Pending"
	VMIScheduling      VirtualMachineInstancePhase = "Scheduling"
	VMIScheduled       VirtualMachineInstancePhase = "Scheduled"
	VMIRunning         VirtualMachineInstancePhase = "Running"
	VMISucceeded       VirtualMachineInstancePhase = "Succeeded"
	VMIFailed          VirtualMachineInstancePhase = "Failed"
	VMIUnknown         VirtualMachineInstancePhase = "Unknown"
	VMIWaitingForSync  VirtualMachineInstancePhase = "WaitingForSync"
	VMIPhaseTerminated VirtualMachineInstancePhase = "Terminated"
)

// VirtualMachineInstanceStatus holds the VMI status fields the operator uses.
//
// +kubebuilder:pruning:PreserveUnknownFields
type VirtualMachineInstanceStatus struct {
	Phase    VirtualMachineInstancePhase `json:"phase,omitempty"`
	NodeName string                      `json:"nodeName,omitempty"`
	// LauncherContainerImageVersion is the image of the virt-launcher the VMI runs in.
	LauncherContainerImageVersion string                                `json:"launcherContainerImageVersion,omitempty"`
	Conditions                    []VirtualMachineInstanceCondition     `json:"conditions,omitempty"`
	MigrationState                *VirtualMachineInstanceMigrationState `json:"migrationState,omitempty"`
	// ActivePods maps launcher pod UIDs to the node they run on.
	ActivePods         map[types.UID]string `json:"activePods,omitempty"`
	EvacuationNodeName string               `json:"evacuationNodeName,omitempty"`
}

// VirtualMachineInstanceConditionType names a VMI condition.
type VirtualMachineInstanceConditionType string

const (
	VMIConditionReady          VirtualMachineInstanceConditionType = "Ready"
	VMIConditionLiveMigratable VirtualMachineInstanceConditionType = "LiveMigratable"
	// VMIConditionMigrationRequired marks a pending CPU or memory hotplug.
	VMIConditionMigrationRequired VirtualMachineInstanceConditionType = "MigrationRequired"
	// VMIConditionVolumesChange marks a pending volume update.
	VMIConditionVolumesChange VirtualMachineInstanceConditionType = "VolumesChange"
)

// VirtualMachineInstanceCondition is one VMI condition.
type VirtualMachineInstanceCondition struct {
	Type   VirtualMachineInstanceConditionType `json:"type"`
	Status corev1.ConditionStatus              `json:"status"`
	// +nullable
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
	// +nullable
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	Reason             string      `json:"reason,omitempty"`
	Message            string      `json:"message,omitempty"`
}

// VirtualMachineInstanceMigrationState is the state of the VMI's current or last migration.
//
// +kubebuilder:pruning:PreserveUnknownFields
type VirtualMachineInstanceMigrationState struct {
	StartTimestamp *metav1.Time `json:"startTimestamp,omitempty"`
	EndTimestamp   *metav1.Time `json:"endTimestamp,omitempty"`
	SourceNode     string       `json:"sourceNode,omitempty"`
	TargetNode     string       `json:"targetNode,omitempty"`
	TargetPod      string       `json:"targetPod,omitempty"`
	Completed      bool         `json:"completed,omitempty"`
	Failed         bool         `json:"failed,omitempty"`
	AbortRequested bool         `json:"abortRequested,omitempty"`
	MigrationUID   types.UID    `json:"migrationUid,omitempty"`
	// FailureReason says why a failed migration failed.
	FailureReason string `json:"failureReason,omitempty"`
}

// VirtualMachineInstanceMigration asks for one VMI to be live-migrated.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=vmim;vmims,categories=all
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="VMI",type=string,JSONPath=`.spec.vmiName`
type VirtualMachineInstanceMigration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VirtualMachineInstanceMigrationSpec   `json:"spec"`
	Status VirtualMachineInstanceMigrationStatus `json:"status,omitempty"`
}

// VirtualMachineInstanceMigrationList is a list of VirtualMachineInstanceMigration.
//
// +kubebuilder:object:root=true
type VirtualMachineInstanceMigrationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VirtualMachineInstanceMigration `json:"items"`
}

// MigrationPriority orders migrations when the cluster's migration budget is full.
type MigrationPriority string

const (
	PrioritySystemCritical MigrationPriority = "system-critical"
	PriorityUserTriggered  MigrationPriority = "user-triggered"
	PrioritySystemMaintain MigrationPriority = "system-maintenance"
)

// VirtualMachineInstanceMigrationSpec names the VMI to migrate.
//
// +kubebuilder:pruning:PreserveUnknownFields
type VirtualMachineInstanceMigrationSpec struct {
	// VMIName is the VMI to migrate, in the migration's namespace.
	VMIName  string             `json:"vmiName,omitempty"`
	Priority *MigrationPriority `json:"priority,omitempty"`
	// AddedNodeSelector restricts the nodes the VMI may migrate to, on top of
	// its own node selector and affinity (which win where keys collide).
	AddedNodeSelector map[string]string `json:"addedNodeSelector,omitempty"`
}

// VirtualMachineInstanceMigrationPhase is a migration's lifecycle phase.
type VirtualMachineInstanceMigrationPhase string

const (
	MigrationPhaseUnset      VirtualMachineInstanceMigrationPhase = ""
	MigrationPending         VirtualMachineInstanceMigrationPhase = "Pending"
	MigrationScheduling      VirtualMachineInstanceMigrationPhase = "Scheduling"
	MigrationScheduled       VirtualMachineInstanceMigrationPhase = "Scheduled"
	MigrationPreparingTarget VirtualMachineInstanceMigrationPhase = "PreparingTarget"
	MigrationTargetReady     VirtualMachineInstanceMigrationPhase = "TargetReady"
	MigrationRunning         VirtualMachineInstanceMigrationPhase = "Running"
	MigrationSucceeded       VirtualMachineInstanceMigrationPhase = "Succeeded"
	MigrationFailed          VirtualMachineInstanceMigrationPhase = "Failed"
)

// VirtualMachineInstanceMigrationStatus is a migration's progress.
//
// +kubebuilder:pruning:PreserveUnknownFields
type VirtualMachineInstanceMigrationStatus struct {
	Phase          VirtualMachineInstanceMigrationPhase  `json:"phase,omitempty"`
	MigrationState *VirtualMachineInstanceMigrationState `json:"migrationState,omitempty"`
	// PhaseTransitionTimestamps are when each phase was reached (virt-controller writes them).
	PhaseTransitionTimestamps []MigrationPhaseTransitionTimestamp `json:"phaseTransitionTimestamps,omitempty"`
}

// MigrationPhaseTransitionTimestamp is when a migration reached a phase.
type MigrationPhaseTransitionTimestamp struct {
	Phase                    VirtualMachineInstanceMigrationPhase `json:"phase,omitempty"`
	PhaseTransitionTimestamp metav1.Time                          `json:"phaseTransitionTimestamp,omitempty"`
}

// VirtualMachine keeps a VMI running according to its run strategy.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=vm;vms,categories=all
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.printableStatus`
type VirtualMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VirtualMachineSpec   `json:"spec"`
	Status VirtualMachineStatus `json:"status,omitempty"`
}

// VirtualMachineList is a list of VirtualMachine.
//
// +kubebuilder:object:root=true
type VirtualMachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []VirtualMachine `json:"items"`
}

// VirtualMachineRunStrategy says when a VM's VMI should run.
type VirtualMachineRunStrategy string

const (
	RunStrategyAlways         VirtualMachineRunStrategy = "Always"
	RunStrategyHalted         VirtualMachineRunStrategy = "Halted"
	RunStrategyManual         VirtualMachineRunStrategy = "Manual"
	RunStrategyRerunOnFailure VirtualMachineRunStrategy = "RerunOnFailure"
	RunStrategyOnce           VirtualMachineRunStrategy = "Once"
)

// VirtualMachineSpec holds the VM fields the operator uses.
//
// +kubebuilder:pruning:PreserveUnknownFields
type VirtualMachineSpec struct {
	RunStrategy *VirtualMachineRunStrategy `json:"runStrategy,omitempty"`
	// Template is the VMI template, kept opaque.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Template *runtime.RawExtension `json:"template,omitempty"`
}

// VirtualMachineStatus holds the VM status fields the operator uses.
//
// +kubebuilder:pruning:PreserveUnknownFields
type VirtualMachineStatus struct {
	PrintableStatus string `json:"printableStatus,omitempty"`
	Created         bool   `json:"created,omitempty"`
	Ready           bool   `json:"ready,omitempty"`
}
