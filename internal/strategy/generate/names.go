package generate

// Component names: Deployment, DaemonSet and container names, and the value of
// the kubevirt.io label on their pods.
const (
	virtAPI         = "virt-api"
	virtController  = "virt-controller"
	virtHandler     = "virt-handler"
	virtExportProxy = "virt-exportproxy"
	virtSyncCtrl    = "virt-synchronization-controller"
	virtOperator    = "virt-operator"
	virtLauncher    = "virt-launcher"
)

// ServiceAccounts, and the names of each component's ClusterRole, Role and bindings.
const (
	saAPIServer   = "kubevirt-apiserver"
	saController  = "kubevirt-controller"
	saHandler     = "kubevirt-handler"
	saExportProxy = "kubevirt-exportproxy"
	saSyncCtrl    = "kubevirt-synchronization-controller"
)

// Services.
const (
	svcPrometheusMetrics = "kubevirt-prometheus-metrics"
	svcAPI               = virtAPI
	svcOperatorWebhook   = "kubevirt-operator-webhook"
	svcExportProxy       = virtExportProxy
)

// Certificate secrets.
const (
	secretCA                      = "kubevirt-ca"
	secretExportCA                = "kubevirt-export-ca"
	secretBackupCA                = "kubevirt-backup-ca"
	secretAPICerts                = "kubevirt-virt-api-certs"
	secretControllerCerts         = "kubevirt-controller-certs"
	secretExportProxyCerts        = "kubevirt-exportproxy-certs"
	secretHandlerServerCerts      = "kubevirt-virt-handler-server-certs"
	secretHandlerMigrationCerts   = "kubevirt-virt-handler-migration-client-certs"
	secretHandlerVsockCerts       = "kubevirt-virt-handler-vsock-client-certs"
	secretHandlerMonitoringCerts  = "kubevirt-virt-handler-monitoring-client-certs"
	secretHandlerCerts            = "kubevirt-virt-handler-certs"
	secretSyncCtrlCerts           = "kubevirt-synchronization-controller-certs"
	secretSyncCtrlServerCerts     = "kubevirt-synchronization-controller-server-certs"
	secretOperatorCerts           = "kubevirt-operator-certs"
	configMapExternalCA           = "kubevirt-external-ca"
	priorityClassKubeVirtCritical = "kubevirt-cluster-critical"
)

// Ports.
const (
	portHTTPS         = 8443 // every component's server: API, webhooks, health, metrics
	portConsoleServer = 8186
	portService       = 443
	portNameMetrics   = "metrics"
	portNameWebhooks  = "webhooks"
)

// Monitoring object names.
const (
	monitoringName = "kubevirt-monitoring"
	prometheusName = "prometheus-kubevirt-rules"
)

// Groups.
const (
	groupKubeVirt     = "kubevirt.io"
	groupSubresources = "subresources.kubevirt.io"
	groupSnapshot     = "snapshot.kubevirt.io"
	groupInstancetype = "instancetype.kubevirt.io"
	groupPool         = "pool.kubevirt.io"
	groupMigrations   = "migrations.kubevirt.io"
	groupExport       = "export.kubevirt.io"
	groupClone        = "clone.kubevirt.io"
	groupBackup       = "backup.kubevirt.io"
	groupPlugin       = "plugin.kubevirt.io"
	groupCDI          = "cdi.kubevirt.io"
)
