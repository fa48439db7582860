package metadata

// Annotations.
const (
	// The target the object was rendered for; compared by the *IsUpToDate checks.
	InstallStrategyVersionAnnotation    = "kubevirt.io/install-strategy-version"
	InstallStrategyRegistryAnnotation   = "kubevirt.io/install-strategy-registry"
	InstallStrategyIdentifierAnnotation = "kubevirt.io/install-strategy-identifier"

	// InstallStrategyConfigMapEncodingAnnotation marks a strategy ConfigMap whose
	// payload is InstallStrategyConfigMapEncodingGzipBase64; without it the payload is plain.
	InstallStrategyConfigMapEncodingAnnotation = "kubevirt.io/install-strategy-cm-encoding"
	InstallStrategyConfigMapEncodingGzipBase64 = "gzip+base64"

	// CustomizerIdentifierAnnotation carries the hash of spec.customizeComponents.
	CustomizerIdentifierAnnotation = "kubevirt.io/customizer-identifier"
	// GenerationAnnotation carries the KubeVirt's metadata.generation on top-level
	// objects only (never on pod templates, so a spec edit restarts no pod).
	GenerationAnnotation = "kubevirt.io/generation"
	// EphemeralBackupObjectAnnotation marks RBAC backup copies.
	EphemeralBackupObjectAnnotation = "kubevirt.io/ephemeral-backup-object"
	// CertificateDurationAnnotation is a certificate secret's duration, as upstream writes it (certs.DurationAnnotation).
	CertificateDurationAnnotation = "kubevirt.io/duration"
	// WebhookCertificateSecretAnnotation names a webhook's serving-certificate secret.
	WebhookCertificateSecretAnnotation = "certificates.kubevirt.io/secret"

	// RetryHandlerRolloutAnnotation on the KubeVirt CR retries a Failed
	// virt-handler rollout to the same target (any value); the operator removes it.
	RetryHandlerRolloutAnnotation = "kubevirt.io/virt-operator-retry-handler-rollout"
	// RetainedAnnotation marks a CRD an upgrade, rollback or gate change kept
	// though the deployment no longer has it, because its objects are user
	// data; the value says how many and for which deployment.
	RetainedAnnotation = "kubevirt.io/virt-operator-retained"
	// RetainedCountAnnotation on a retained CRD is how many user objects it
	// held when it was kept (absent when they could not be counted): naming
	// the CRD in DeleteRetainedAnnotation confirms deleting that many, no more.
	RetainedCountAnnotation = "kubevirt.io/virt-operator-retained-count"
	// DeleteRetainedAnnotation on the KubeVirt CR names, comma-separated, the
	// retained CRDs the operator may delete, and their objects with them; a
	// name is removed once used, and when its CRD is retained (package apply's
	// DecideCRD).
	DeleteRetainedAnnotation = "kubevirt.io/virt-operator-delete-retained-crds"

	// RequiredSCCAnnotation pins the OpenShift SCC of a pod template.
	RequiredSCCAnnotation = "openshift.io/required-scc"
	RequiredSCCRestricted = "restricted-v2"    // virt-api and related components
	RequiredSCCHandler    = "kubevirt-handler" // virt-handler

	// Set on the KubeVirt CR itself.
	LatestObservedAPIVersionAnnotation  = "kubevirt.io/latest-observed-api-version"
	StorageObservedAPIVersionAnnotation = "kubevirt.io/storage-observed-api-version"
)

// Labels.
const (
	// InstallStrategyLabel (value "") marks install-strategy ConfigMaps and Jobs.
	InstallStrategyLabel = "kubevirt.io/install-strategy"

	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "virt-operator"
	// LegacyManagedByValue is still accepted as "managed by us" (see IsManaged).
	LegacyManagedByValue = "kubevirt-operator"

	// AppLabel carries the component name (e.g. virt-api) or "".
	AppLabel            = "kubevirt.io"
	AppNameLabel        = "app.kubernetes.io/name"
	AppVersionLabel     = "app.kubernetes.io/version"
	AppPartOfLabel      = "app.kubernetes.io/part-of"
	AppComponentLabel   = "app.kubernetes.io/component"
	DefaultAppComponent = "kubevirt"

	// PrometheusLabel: "true" on scraped objects.
	PrometheusLabel = "prometheus.kubevirt.io"
	// AllowAccessClusterServicesLabel: "true" on pods that network policies let reach cluster services.
	AllowAccessClusterServicesLabel = "np.kubevirt.io/allow-access-cluster-services"
	// ClusterMonitoringLabel: "true" on the KubeVirt namespace, "" on ServiceMonitors.
	ClusterMonitoringLabel = "openshift.io/cluster-monitoring"
	// K8sAppLabel: "kubevirt" on ServiceMonitors.
	K8sAppLabel = "k8s-app"

	// LauncherApp is AppLabel's value on a VMI's virt-launcher pods.
	LauncherApp = "virt-launcher"
	// CreatedByLabel on a virt-launcher pod holds the UID of its VMI.
	CreatedByLabel = "kubevirt.io/created-by"
	// SchedulableLabel is virt-handler's mark on its node: "true" when it can
	// run VMs there (upstream sizes virt-api by them), "false" when it cannot
	// (no migration target).
	SchedulableLabel = "kubevirt.io/schedulable"
)

// Finalizers.
const (
	// KubeVirtFinalizer holds the KubeVirt CR until the control plane is removed.
	KubeVirtFinalizer = "kubevirt.io/foregroundDeleteKubeVirt"
	// LegacyKubeVirtFinalizer is stripped whenever it is seen.
	LegacyKubeVirtFinalizer = "foregroundDeleteKubeVirt"
	// VirtOperatorFinalizer holds CRDs while the operator deletes their objects.
	VirtOperatorFinalizer = "kubevirt.io/virtOperatorFinalizer"
)
