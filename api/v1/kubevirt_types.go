package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// KubeVirt is the cluster's one KubeVirt installation: the operator installs,
// upgrades and removes the control plane it describes.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=kv;kvs,categories=all
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.status.targetKubeVirtVersion`
// +kubebuilder:printcolumn:name="Observed",type=string,JSONPath=`.status.observedKubeVirtVersion`
// +kubebuilder:printcolumn:name="Handler",type=string,JSONPath=`.status.handlerRollout.phase`
// +kubebuilder:printcolumn:name="Outdated",type=integer,JSONPath=`.status.outdatedVirtualMachineInstanceWorkloads`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`,priority=1
type KubeVirt struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   KubeVirtSpec   `json:"spec"`
	Status KubeVirtStatus `json:"status,omitempty"`
}

// KubeVirtList is a list of KubeVirt.
//
// +kubebuilder:object:root=true
type KubeVirtList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KubeVirt `json:"items"`
}

// KubeVirtSpec is what the cluster admin asks for.
//
// +kubebuilder:validation:XValidation:rule="!has(self.workloadUpdates) || !has(self.workloadUpdateStrategy) || !has(self.workloadUpdateStrategy.workloadUpdateMethods) || size(self.workloadUpdateStrategy.workloadUpdateMethods) == 0",message="spec.workloadUpdates configures virt-operator's workload updater and cannot be set while spec.workloadUpdateStrategy.workloadUpdateMethods lists a method (then virt-controller moves the VMs): clear one of the two"
type KubeVirtSpec struct {
	// ImageTag overrides the version (image tag) of every component.
	ImageTag string `json:"imageTag,omitempty"`
	// ImageRegistry overrides the registry of every component image.
	ImageRegistry string `json:"imageRegistry,omitempty"`
	// ImagePullPolicy of every component container.
	// +kubebuilder:validation:Enum=Always;Never;IfNotPresent
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// ImagePullSecrets added to every component pod.
	// +listType=atomic
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// MonitorNamespace is where Prometheus runs; empty means openshift-monitoring, then monitoring.
	MonitorNamespace string `json:"monitorNamespace,omitempty"`
	// ServiceMonitorNamespace is where the ServiceMonitor goes; empty means MonitorNamespace.
	ServiceMonitorNamespace string `json:"serviceMonitorNamespace,omitempty"`
	// MonitorAccount is Prometheus' ServiceAccount; empty means prometheus-k8s.
	MonitorAccount string `json:"monitorAccount,omitempty"`

	// WorkloadUpdateStrategy says how running VMIs move to new components after an
	// upgrade; a listed method makes upstream's virt-controller move them.
	WorkloadUpdateStrategy KubeVirtWorkloadUpdateStrategy `json:"workloadUpdateStrategy,omitempty"`
	// WorkloadUpdates configures virt-operator's own workload updater instead
	// (paced by capacity, with backoff, per-VM choices, pause and windows). It is
	// refused while workloadUpdateStrategy.workloadUpdateMethods lists a method.
	WorkloadUpdates *WorkloadUpdatePolicy `json:"workloadUpdates,omitempty"`

	// UninstallStrategy says whether deleting the CR is refused while workloads exist.
	UninstallStrategy KubeVirtUninstallStrategy `json:"uninstallStrategy,omitempty"`

	// CertificateRotateStrategy sets the lifetimes of the self-signed certificates.
	CertificateRotateStrategy KubeVirtCertificateRotateStrategy `json:"certificateRotateStrategy,omitempty"`

	// ProductVersion, ProductName and ProductComponent label every created object.
	ProductVersion   string `json:"productVersion,omitempty"`
	ProductName      string `json:"productName,omitempty"`
	ProductComponent string `json:"productComponent,omitempty"`

	// Configuration holds the settings components read at run time.
	Configuration KubeVirtConfiguration `json:"configuration,omitempty"`

	// Infra places and sizes the control-plane components (virt-api, virt-controller, ...).
	Infra *ComponentConfig `json:"infra,omitempty"`
	// Workloads places virt-handler and therefore the nodes that may run VMs.
	Workloads *ComponentConfig `json:"workloads,omitempty"`

	// CustomizeComponents patches and flags applied to the generated objects.
	CustomizeComponents CustomizeComponents `json:"customizeComponents,omitempty"`

	// SynchronizationPort is the port of virt-synchronization-controller (default 9185).
	SynchronizationPort string `json:"synchronizationPort,omitempty"`

	// HandlerRollout tunes the virt-handler canary upgrade (not in upstream's API;
	// upstream hard-codes 1 pod, then 10%).
	HandlerRollout *HandlerRolloutPolicy `json:"handlerRollout,omitempty"`

	// Paused holds an install or upgrade under way: steps in flight finish
	// (a virt-handler rollout stops updating further pods), nothing new starts.
	// Not in upstream's API.
	Paused bool `json:"paused,omitempty"`
	// RolloutWindows are the times an install or upgrade may start new steps;
	// none means any time. Outside them it holds as when paused.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	RolloutWindows []MaintenanceWindow `json:"rolloutWindows,omitempty"`
}

// HandlerRolloutPolicy tunes the virt-handler canary: CanarySize pods are
// updated first and must stay Ready with no restart for BakeTime before the
// rollout widens to FastStep; a phase older than ProgressDeadline sets Degraded.
type HandlerRolloutPolicy struct {
	// CanarySize is how many nodes get the new virt-handler first (default 1).
	// +kubebuilder:validation:Minimum=1
	CanarySize *int32 `json:"canarySize,omitempty"`
	// FastStep is maxUnavailable once the canary has baked: a count or a percentage (default 10%).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^([1-9][0-9]*|([1-9][0-9]?|100)%)$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || (self >= 1 && self <= 2147483647)",message="must be a count from 1 to 2147483647 or a percentage"
	FastStep *intstr.IntOrString `json:"fastStep,omitempty"`
	// BakeTime is how long the canary must stay Ready with no restart (default 10s), a Go duration.
	BakeTime *Duration `json:"bakeTime,omitempty"`
	// ProgressDeadline is how long the rollout may go without a pod newly updated or ready before
	// Degraded says where it is stuck (default 10m).
	ProgressDeadline *Duration `json:"progressDeadline,omitempty"`
	// MaxCrashing is how many updated pods may crash once the canary has baked
	// before the rollout fails and rolls back: a count, or a percentage of the
	// desired pods (at least one pod), default 10%. During the canary any crash
	// fails it. 0 fails on any crash in every phase.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^([0-9]+|([0-9]|[1-9][0-9]|100)%)$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || (self >= 0 && self <= 2147483647)",message="must be a count from 0 to 2147483647 or a percentage"
	MaxCrashing *intstr.IntOrString `json:"maxCrashing,omitempty"`
	// MaxMigrationWait is how long the rollout leaves a node's virt-handler pod
	// in place while a live migration from or to that node is unfinished,
	// counted from the migration's start (default 10m), a Go duration. Past it
	// the pod is replaced all the same, with a Warning Event naming the
	// migration. 0 waits for no migration.
	MaxMigrationWait *Duration `json:"maxMigrationWait,omitempty"`
	// DataPlaneChecks prove that the canary's virt-handler can run VMs before
	// the rollout widens: VMIs on the canary node stay Running, the canary pod
	// and its node stay healthy, a live migration onto and off the canary node
	// succeeds. None by default: the canary widens once it has baked, as
	// upstream's does.
	DataPlaneChecks *HandlerDataPlaneChecks `json:"dataPlaneChecks,omitempty"`
}

// WorkloadUpdateMethod is one way to move a VMI onto new components.
// +kubebuilder:validation:Enum=LiveMigrate;Evict
type WorkloadUpdateMethod string

const (
	// WorkloadUpdateMethodLiveMigrate live-migrates the VMI into a new launcher pod.
	WorkloadUpdateMethodLiveMigrate WorkloadUpdateMethod = "LiveMigrate"
	// WorkloadUpdateMethodEvict evicts the VMI's launcher pod.
	WorkloadUpdateMethodEvict WorkloadUpdateMethod = "Evict"
)

// KubeVirtWorkloadUpdateStrategy says how outdated VMIs are updated.
type KubeVirtWorkloadUpdateStrategy struct {
	// WorkloadUpdateMethods allowed; empty means workloads are never updated automatically.
	// +listType=atomic
	WorkloadUpdateMethods []WorkloadUpdateMethod `json:"workloadUpdateMethods,omitempty"`
	// BatchEvictionSize is how many VMIs are evicted per interval (default 10).
	// +kubebuilder:validation:Minimum=1
	BatchEvictionSize *int `json:"batchEvictionSize,omitempty"`
	// BatchEvictionInterval is the time between eviction batches (default 1m), a Go duration.
	BatchEvictionInterval *Duration `json:"batchEvictionInterval,omitempty"`
}

// KubeVirtUninstallStrategy decides what deleting the KubeVirt CR does while VMIs exist.
// +kubebuilder:validation:Enum=RemoveWorkloads;BlockUninstallIfWorkloadsExist
type KubeVirtUninstallStrategy string

const (
	// UninstallStrategyRemoveWorkloads removes the control plane even if VMIs exist.
	UninstallStrategyRemoveWorkloads KubeVirtUninstallStrategy = "RemoveWorkloads"
	// UninstallStrategyBlockUninstallIfWorkloadsExist refuses to uninstall while VMIs exist (the default).
	UninstallStrategyBlockUninstallIfWorkloadsExist KubeVirtUninstallStrategy = "BlockUninstallIfWorkloadsExist"
)

// KubeVirtCertificateRotateStrategy configures certificate rotation.
type KubeVirtCertificateRotateStrategy struct {
	SelfSigned *KubeVirtSelfSignConfiguration `json:"selfSigned,omitempty"`
}

// KubeVirtSelfSignConfiguration sets the lifetimes of the self-signed CA and server certificates.
type KubeVirtSelfSignConfiguration struct {
	// CA is the CA certificate's duration and renewal point (default 168h, renewed 33.6h before expiry).
	CA *CertConfig `json:"ca,omitempty"`
	// Server is the serving certificates' duration and renewal point (default 24h, renewed 4.8h before expiry).
	Server *CertConfig `json:"server,omitempty"`
}

// CertConfig is one certificate's lifetime.
type CertConfig struct {
	// Duration is how long the certificate is valid, a Go duration of at least 1m.
	Duration *Duration `json:"duration,omitempty"`
	// RenewBefore is how long before its end the certificate is replaced, a Go
	// duration of at least 10s and shorter than Duration (default 20% of it).
	RenewBefore *Duration `json:"renewBefore,omitempty"`
}

// KubeVirtConfiguration holds settings that components read from the CR.
// Fields the operator does not use are preserved as written.
//
// +kubebuilder:pruning:PreserveUnknownFields
type KubeVirtConfiguration struct {
	DeveloperConfiguration  *DeveloperConfiguration  `json:"developerConfiguration,omitempty"`
	MigrationConfiguration  *MigrationConfiguration  `json:"migrations,omitempty"`
	VirtTemplateDeployment  *VirtTemplateDeployment  `json:"virtTemplateDeployment,omitempty"`
	RoleAggregationStrategy *RoleAggregationStrategy `json:"roleAggregationStrategy,omitempty"`
	// PersistentReservationConfiguration deploys virt-handler's pr-helper when enabled
	// (it wins over the legacy PersistentReservation feature gate).
	PersistentReservationConfiguration *PersistentReservationConfiguration `json:"persistentReservationConfiguration,omitempty"`
	// ArchitectureConfiguration holds the default architecture of new VMIs.
	ArchitectureConfiguration *ArchitectureConfiguration `json:"architectureConfiguration,omitempty"`
	// CommonInstancetypesDeployment turns the release's cluster instancetypes and
	// preferences on (the default) or off.
	CommonInstancetypesDeployment *CommonInstancetypesDeployment `json:"commonInstancetypesDeployment,omitempty"`
	// TLSConfiguration is the TLS the components serve. The operator passes it to
	// virt-template-apiserver and -controller as flags, as upstream's does
	// (--tls-min-version VersionTLS12 when it is unset); the other components
	// read it from the CR.
	TLSConfiguration *TLSConfiguration `json:"tlsConfiguration,omitempty"`
}

// TLSConfiguration holds the TLS options of the components (upstream's type).
type TLSConfiguration struct {
	// MinTLSVersion is the oldest TLS version the components accept.
	// +kubebuilder:validation:Enum=VersionTLS10;VersionTLS11;VersionTLS12;VersionTLS13
	MinTLSVersion TLSProtocolVersion `json:"minTLSVersion,omitempty"`
	// Ciphers are the cipher suites the components accept, by name.
	// +listType=set
	Ciphers []string `json:"ciphers,omitempty"`
}

// TLSProtocolVersion is a TLS version, as Go's crypto/tls names it.
type TLSProtocolVersion string

// The TLS versions TLSConfiguration accepts.
const (
	VersionTLS10 TLSProtocolVersion = "VersionTLS10"
	VersionTLS11 TLSProtocolVersion = "VersionTLS11"
	VersionTLS12 TLSProtocolVersion = "VersionTLS12"
	VersionTLS13 TLSProtocolVersion = "VersionTLS13"
)

// CommonInstancetypesDeployment turns the common instancetypes and preferences on or off.
type CommonInstancetypesDeployment struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// PersistentReservationConfiguration turns SCSI persistent reservation support on or off.
type PersistentReservationConfiguration struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// ArchitectureConfiguration holds the architecture settings the operator reads.
//
// +kubebuilder:pruning:PreserveUnknownFields
type ArchitectureConfiguration struct {
	// DefaultArchitecture is written to status.defaultArchitecture, where virt-api's
	// mutating webhook reads it for VMIs that name no architecture; empty means the
	// operator's own architecture.
	DefaultArchitecture string `json:"defaultArchitecture,omitempty"`
}

// DeveloperConfiguration holds the feature gates.
type DeveloperConfiguration struct {
	// +listType=atomic
	FeatureGates []string `json:"featureGates,omitempty"`
	// +listType=atomic
	DisabledFeatureGates []string `json:"disabledFeatureGates,omitempty"`
}

// MigrationConfiguration holds the live-migration settings the operator uses.
type MigrationConfiguration struct {
	// ParallelMigrationsPerCluster caps concurrent migrations in the cluster (default 5).
	// +kubebuilder:validation:Minimum=0
	ParallelMigrationsPerCluster *uint32 `json:"parallelMigrationsPerCluster,omitempty"`
	// ParallelOutboundMigrationsPerNode caps concurrent migrations leaving one node (default 2).
	// +kubebuilder:validation:Minimum=0
	ParallelOutboundMigrationsPerNode *uint32 `json:"parallelOutboundMigrationsPerNode,omitempty"`
	// Network is the NetworkAttachmentDefinition used for migration traffic.
	Network *string `json:"network,omitempty"`
}

// VirtTemplateDeployment turns the virt-template bundle on or off.
type VirtTemplateDeployment struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// RoleAggregationStrategy says whether KubeVirt's ClusterRoles aggregate into the default roles.
// +kubebuilder:validation:Enum=AggregateToDefault;Manual
type RoleAggregationStrategy string

// ComponentConfig places and sizes a group of components.
type ComponentConfig struct {
	// NodePlacement for the components' pods.
	NodePlacement *NodePlacement `json:"nodePlacement,omitempty"`
	// Replicas of each Deployment (infra only); must not be 0.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=255
	Replicas *uint8 `json:"replicas,omitempty"`
}

// NodePlacement is the scheduling constraints copied into the components' pod templates.
type NodePlacement struct {
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	Affinity     *corev1.Affinity  `json:"affinity,omitempty"`
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// CustomizeComponents patches and flags applied on top of the install strategy.
type CustomizeComponents struct {
	// +listType=atomic
	Patches []CustomizeComponentsPatch `json:"patches,omitempty"`
	Flags   *Flags                     `json:"flags,omitempty"`
}

// CustomizeComponentsPatch is one patch applied to every generated object of a kind and name.
type CustomizeComponentsPatch struct {
	// ResourceName is the object's name, or "*" for all of ResourceType.
	// +kubebuilder:validation:MinLength=1
	ResourceName string `json:"resourceName"`
	// ResourceType is the kind's plural resource, e.g. Deployment or DaemonSet.
	// +kubebuilder:validation:MinLength=1
	ResourceType string `json:"resourceType"`
	// Patch is the patch document.
	Patch string `json:"patch"`
	// Type of the patch.
	Type PatchType `json:"type"`
}

// PatchType is a customizeComponents patch's format.
// +kubebuilder:validation:Enum=json;merge;strategic
type PatchType string

const (
	JSONPatchType           PatchType = "json"
	MergePatchType          PatchType = "merge"
	StrategicMergePatchType PatchType = "strategic"
)

// Flags replace the command-line flags of the components.
type Flags struct {
	API        map[string]string `json:"api,omitempty"`
	Controller map[string]string `json:"controller,omitempty"`
	Handler    map[string]string `json:"handler,omitempty"`
}

// KubeVirtPhase is the installation's lifecycle phase.
type KubeVirtPhase string

const (
	KubeVirtPhaseUnset     KubeVirtPhase = ""
	KubeVirtPhaseDeploying KubeVirtPhase = "Deploying"
	KubeVirtPhaseDeployed  KubeVirtPhase = "Deployed"
	KubeVirtPhaseDeleting  KubeVirtPhase = "Deleting"
	KubeVirtPhaseDeleted   KubeVirtPhase = "Deleted"
)

// KubeVirtStatus is what the operator observed and decided.
type KubeVirtStatus struct {
	Phase      KubeVirtPhase       `json:"phase,omitempty"`
	Conditions []KubeVirtCondition `json:"conditions,omitempty"`

	OperatorVersion string `json:"operatorVersion,omitempty"`

	TargetKubeVirtVersion  string `json:"targetKubeVirtVersion,omitempty"`
	TargetKubeVirtRegistry string `json:"targetKubeVirtRegistry,omitempty"`
	TargetDeploymentConfig string `json:"targetDeploymentConfig,omitempty"`
	TargetDeploymentID     string `json:"targetDeploymentID,omitempty"`

	ObservedKubeVirtVersion  string `json:"observedKubeVirtVersion,omitempty"`
	ObservedKubeVirtRegistry string `json:"observedKubeVirtRegistry,omitempty"`
	ObservedDeploymentConfig string `json:"observedDeploymentConfig,omitempty"`
	ObservedDeploymentID     string `json:"observedDeploymentID,omitempty"`

	ObservedGeneration  *int64 `json:"observedGeneration,omitempty"`
	DefaultArchitecture string `json:"defaultArchitecture,omitempty"`

	// OutdatedVirtualMachineInstanceWorkloads counts VMIs still on an old launcher.
	OutdatedVirtualMachineInstanceWorkloads *int `json:"outdatedVirtualMachineInstanceWorkloads,omitempty"`

	// Generations records the last applied generation of each managed object.
	// +listType=atomic
	Generations []GenerationStatus `json:"generations,omitempty"`

	// HandlerRollout shows the progress of the virt-handler canary rollout.
	HandlerRollout *HandlerRolloutStatus `json:"handlerRollout,omitempty"`

	// WorkloadUpdates shows the progress of moving VMIs onto the current launcher.
	WorkloadUpdates *WorkloadUpdatesStatus `json:"workloadUpdates,omitempty"`

	// RolloutHold says why the install or upgrade under way starts nothing new
	// (spec.paused, outside spec.rolloutWindows); nil when it may.
	RolloutHold *RolloutHoldStatus `json:"rolloutHold,omitempty"`

	// Preflight are the checks of the upgrade to the target, run before its
	// first step (not in upstream's API).
	Preflight *PreflightStatus `json:"preflight,omitempty"`

	// History is the last deployments, newest first (at most 10).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	History []DeploymentRecord `json:"history,omitempty"`

	// InstallStrategies are the install-strategy ConfigMaps the operator
	// accepted for the deployments it applies (the target's, and the observed
	// one's while it differs): only a ConfigMap named here, with the same UID
	// and content digest, is ever applied (not in upstream's API).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=2
	InstallStrategies []InstallStrategyRef `json:"installStrategies,omitempty"`

	// Certificates says where the control plane's certificates stand, as the
	// certificate controller keeps them (not in upstream's API).
	Certificates *CertificatesStatus `json:"certificates,omitempty"`
}

// CertificatesStatus is where the certificates stand.
type CertificatesStatus struct {
	// NextCheck is when a certificate is next due, or a CA bundle next drops
	// an expired certificate.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	NextCheck *metav1.Time `json:"nextCheck,omitempty"`
	// Reason and Message say why the certificates could not be kept valid;
	// empty while they are.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// InstallStrategyRef is one accepted install-strategy ConfigMap.
type InstallStrategyRef struct {
	DeploymentID string `json:"deploymentID"`
	ConfigMap    string `json:"configMap"`
	UID          string `json:"uid"`
	// Digest is the SHA-256 of the ConfigMap's strategy payload.
	Digest string `json:"digest"`
	// Source says how it was accepted: Rendered (equal to this operator's own
	// rendering of a release it knows) or Job (written by the strategy Job
	// started for the ID).
	Source string `json:"source"`
}

// PreflightStatus are the checks of one target.
type PreflightStatus struct {
	TargetID string `json:"targetID"`
	// +listType=atomic
	Checks []PreflightCheck `json:"checks,omitempty"`
}

// PreflightCheck is one check's result.
type PreflightCheck struct {
	Name string `json:"name"`
	// State: Passed, Failed or Running.
	State   string `json:"state"`
	Message string `json:"message,omitempty"`
}

// RolloutHoldStatus is a held install or upgrade: why, and where.
type RolloutHoldStatus struct {
	// Reason: Paused or OutsideRolloutWindows.
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Step is where it holds: the step it does not start, or virt-handler
	// while its rollout stops updating pods.
	Step string `json:"step,omitempty"`
	// NextWindowOpen is when the next rollout window opens.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	NextWindowOpen *metav1.Time `json:"nextWindowOpen,omitempty"`
}

// DeploymentRecord is one deployment: a target the operator rolled out, or is
// rolling out.
type DeploymentRecord struct {
	DeploymentID string `json:"deploymentID"`
	// FromVersion is what was observed when the target was set (empty on an install).
	FromVersion string `json:"fromVersion,omitempty"`
	ToVersion   string `json:"toVersion"`
	// ChangedKeys are the deployment config keys that changed.
	// +listType=atomic
	ChangedKeys []string `json:"changedKeys,omitempty"`
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	StartedAt metav1.Time `json:"startedAt"`
	// FinishedAt is when observed reached this target, or another target replaced it.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// Outcome: InProgress, Succeeded, Failed (rolled back; holds until retried),
	// or Superseded (a new target came first).
	Outcome string `json:"outcome"`
	// LastProblem is the last reason it could not progress (kept once solved).
	LastProblem string `json:"lastProblem,omitempty"`
	// Phases are the stages it went through, each with how long it took.
	// +listType=atomic
	Phases []DeploymentPhase `json:"phases,omitempty"`
	// VMIsMigrated and VMIsEvicted are what the workload updater did for it
	// (final once the next deployment starts).
	VMIsMigrated int `json:"vmisMigrated,omitempty"`
	VMIsEvicted  int `json:"vmisEvicted,omitempty"`
}

// DeploymentPhase is one stage of a deployment.
type DeploymentPhase struct {
	Name string `json:"name"`
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	StartedAt metav1.Time `json:"startedAt"`
	// Seconds it took; set once the next stage began.
	Seconds *int64 `json:"seconds,omitempty"`
}

// WorkloadUpdatesStatus is the workload updater's progress towards one deployment.
type WorkloadUpdatesStatus struct {
	// DeploymentID is the target deployment these counts belong to; a new target
	// starts them again.
	DeploymentID string `json:"deploymentID,omitempty"`
	// MigrationsInFlight counts unfinished migrations of outdated VMIs.
	MigrationsInFlight int `json:"migrationsInFlight"`
	// WaitingForMigration and WaitingForEviction count outdated VMIs left for a later step.
	WaitingForMigration int `json:"waitingForMigration"`
	WaitingForEviction  int `json:"waitingForEviction"`
	// MigrationsCreated and Evicted count what the updater did for this deployment.
	MigrationsCreated int `json:"migrationsCreated"`
	Evicted           int `json:"evicted"`
	// LastEvictionBatch is when the last batch of evictions was sent; the next
	// waits batchEvictionInterval after it, across operator restarts.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	LastEvictionBatch *metav1.Time `json:"lastEvictionBatch,omitempty"`
	// Blocked says why the updater does not act now (empty when it may).
	Blocked string `json:"blocked,omitempty"`
	// Actor is who moves outdated VMs: virt-controller, virt-operator or none.
	Actor WorkloadUpdateActor `json:"actor,omitempty"`
	// Outdated counts VMIs on an old launcher or with a change that needs a
	// migration, as this operator sees them (outdatedVirtualMachineInstanceWorkloads
	// is virt-controller's count).
	Outdated int `json:"outdated"`
	// Choices count the outdated VMIs by how they are to be moved.
	Choices *WorkloadUpdateChoices `json:"choices,omitempty"`
	// BackingOff counts VMIs waiting out the backoff after a failed migration.
	BackingOff int `json:"backingOff,omitempty"`
	// NeedsAttention counts VMIs whose migrations failed maxFailures times; they
	// are not migrated again until their failed migrations are deleted.
	NeedsAttention int `json:"needsAttention,omitempty"`
	// NeedsAttentionVMIs names up to 10 of them (namespace/name).
	// +listType=atomic
	NeedsAttentionVMIs []string `json:"needsAttentionVMIs,omitempty"`
	// NotMovable counts outdated VMIs to live-migrate that no other node can
	// take (none schedulable, none matching their node selector or affinity, or
	// none whose taints they tolerate) and that may not be evicted: no migration
	// is created for them.
	NotMovable int `json:"notMovable,omitempty"`
	// NotMovableVMIs names up to 10 of them with why ("namespace/name: reason").
	// +listType=atomic
	NotMovableVMIs []string `json:"notMovableVMIs,omitempty"`
	// Paused is spec.workloadUpdates.paused as the updater last read it.
	Paused bool `json:"paused,omitempty"`
	// Window says whether new moves may start now.
	Window *WorkloadUpdateWindowStatus `json:"window,omitempty"`
}

// GenerationStatus is the last generation the operator applied to one object.
type GenerationStatus struct {
	Group          string `json:"group"`
	Resource       string `json:"resource"`
	Namespace      string `json:"namespace,omitempty"`
	Name           string `json:"name"`
	LastGeneration int64  `json:"lastGeneration"`
	Hash           string `json:"hash,omitempty"`
}

// HandlerRolloutStatus is the virt-handler canary rollout as the operator sees it.
type HandlerRolloutStatus struct {
	// Phase of the rollout: Started, Canary, Increasing, Waiting, Successful or Failed.
	Phase       string `json:"phase,omitempty"`
	DesiredPods int32  `json:"desiredPods,omitempty"`
	UpdatedPods int32  `json:"updatedPods,omitempty"`
	ReadyPods   int32  `json:"readyPods,omitempty"`
	CanaryPod   string `json:"canaryPod,omitempty"`
	CanaryNode  string `json:"canaryNode,omitempty"`
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	PhaseChangeAt *metav1.Time `json:"phaseChangeAt,omitempty"`
	// LastProgressAt is when more pods last got updated or ready (or the phase
	// changed); progressDeadline counts from it, so a slow healthy rollout is
	// never called stuck.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	LastProgressAt *metav1.Time `json:"lastProgressAt,omitempty"`
	// Paused: the rollout updates no further pods (spec.paused or outside the
	// rollout windows); the canary bakes on but does not widen.
	Paused  bool   `json:"paused,omitempty"`
	Message string `json:"message,omitempty"`
	// TargetID is the deployment ID this rollout goes to; a Failed rollout
	// holds for it until the target changes.
	TargetID string `json:"targetID,omitempty"`
	// MigrationWaits are nodes whose virt-handler pod the rollout leaves in
	// place while a live migration from or to them is unfinished (at most
	// spec.handlerRollout.maxMigrationWait from its start): the first 5 by
	// node name. NodesWaitingForMigrations counts them all.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=5
	MigrationWaits []HandlerMigrationWait `json:"migrationWaits,omitempty"`
	// NodesWaitingForMigrations is how many nodes wait for a migration.
	NodesWaitingForMigrations int32 `json:"nodesWaitingForMigrations,omitempty"`
	// DataPlaneChecks are this rollout's data-plane checks
	// (spec.handlerRollout.dataPlaneChecks), one per check asked for.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=3
	DataPlaneChecks []HandlerDataPlaneCheck `json:"dataPlaneChecks,omitempty"`
	// CanaryVMIs are the VMIs that ran on the canary nodes when the canary
	// began, which the canaryVMIs check watches (the first 256 by name).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=256
	CanaryVMIs []HandlerWatchedVMI `json:"canaryVMIs,omitempty"`
	// MigrationProbe is the migration probe's progress: the VMI it moves and
	// its migrations, so a restarted operator resumes it.
	MigrationProbe *HandlerMigrationProbeStatus `json:"migrationProbe,omitempty"`
}

// HandlerMigrationWait is one node whose virt-handler pod waits for a migration.
type HandlerMigrationWait struct {
	// Node waits.
	Node string `json:"node"`
	// Migration is the VirtualMachineInstanceMigration it waits for, as
	// namespace/name (of several, the one that lasts longest).
	Migration string `json:"migration"`
	// Until is when the wait ends even if the migration has not finished.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	Until metav1.Time `json:"until"`
}

// KubeVirtConditionType names a condition on the KubeVirt CR.
type KubeVirtConditionType string

const (
	KubeVirtConditionAvailable    KubeVirtConditionType = "Available"
	KubeVirtConditionProgressing  KubeVirtConditionType = "Progressing"
	KubeVirtConditionDegraded     KubeVirtConditionType = "Degraded"
	KubeVirtConditionCreated      KubeVirtConditionType = "Created"
	KubeVirtConditionSynchronized KubeVirtConditionType = "Synchronized"
	// Ready, Reconciling and Stalled are the conditions of the Kubernetes API
	// conventions (kstatus), which Argo CD, Flux and kubectl wait read; they
	// summarise upstream's Available, Progressing and Degraded.
	KubeVirtConditionReady       KubeVirtConditionType = "Ready"
	KubeVirtConditionReconciling KubeVirtConditionType = "Reconciling"
	KubeVirtConditionStalled     KubeVirtConditionType = "Stalled"
	// Upgradeable says whether the upgrade to the target passed its preflight.
	KubeVirtConditionUpgradeable KubeVirtConditionType = "Upgradeable"
	// KubeVirtConditionDataRetained is True while CRDs the deployment no longer
	// has are kept because their objects are user data; it names them.
	KubeVirtConditionDataRetained KubeVirtConditionType = "DataRetained"
)

// KubeVirtCondition is one condition on the KubeVirt CR, shaped as upstream's.
type KubeVirtCondition struct {
	Type   KubeVirtConditionType  `json:"type"`
	Status corev1.ConditionStatus `json:"status"`
	// +nullable
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
	// +nullable
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	Reason             string      `json:"reason,omitempty"`
	Message            string      `json:"message,omitempty"`
	// ObservedGeneration is the generation the condition was computed for (set on
	// Ready, Reconciling and Stalled, which GitOps tools read).
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}
