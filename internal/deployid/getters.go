package deployid

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Defaults applied by the getters, as upstream (§2.5).
const (
	DefaultImagePullPolicy     = corev1.PullIfNotPresent
	DefaultMonitorAccount      = "prometheus-k8s"
	DefaultSynchronizationPort = int32(9185)
)

// DefaultMonitorNamespaces are tried in order when spec.monitorNamespace is unset.
var DefaultMonitorNamespaces = []string{"openshift-monitoring", "monitoring"}

func (c *Config) prop(key string) string { return c.AdditionalProperties[key] }

func (c *Config) has(key string) bool { return c.prop(key) != "" }

// ImagePullPolicy of every component container; IfNotPresent by default.
func (c *Config) ImagePullPolicy() corev1.PullPolicy {
	if p := c.prop(KeyImagePullPolicy); p != "" {
		return corev1.PullPolicy(p)
	}
	return DefaultImagePullPolicy
}

// ImagePullSecrets added to every component pod; nil when none (or, impossibly
// after Validate, when the stored JSON is unreadable).
func (c *Config) ImagePullSecrets() []corev1.LocalObjectReference {
	secrets, _ := c.imagePullSecrets()
	return secrets
}

func (c *Config) imagePullSecrets() ([]corev1.LocalObjectReference, error) {
	raw := c.prop(KeyImagePullSecrets)
	if raw == "" {
		return nil, nil
	}
	var secrets []corev1.LocalObjectReference
	if err := json.Unmarshal([]byte(raw), &secrets); err != nil {
		return nil, fmt.Errorf("deployment config: additionalProperties.%s is not a JSON list of {name}: %w", KeyImagePullSecrets, err)
	}
	return secrets, nil
}

// PotentialMonitorNamespaces are where Prometheus may run, in the order to try.
func (c *Config) PotentialMonitorNamespaces() []string {
	if ns := c.prop(KeyMonitorNamespace); ns != "" {
		return []string{ns}
	}
	return append([]string(nil), DefaultMonitorNamespaces...)
}

// MonitoringNamespaces are every namespace the monitoring objects may be in
// for c: the namespaces monitoring may be in, and the ServiceMonitor's.
func (c *Config) MonitoringNamespaces() []string {
	out := c.PotentialMonitorNamespaces()
	if ns := c.ServiceMonitorNamespace(); ns != "" && !slices.Contains(out, ns) {
		out = append(out, ns)
	}
	return out
}

// ServiceMonitorNamespace is where the ServiceMonitor goes; "" means the monitor
// namespace that was found.
func (c *Config) ServiceMonitorNamespace() string { return c.prop(KeyServiceMonitorNamespace) }

// MonitorAccount is Prometheus' ServiceAccount; prometheus-k8s by default.
func (c *Config) MonitorAccount() string {
	if a := c.prop(KeyMonitorAccount); a != "" {
		return a
	}
	return DefaultMonitorAccount
}

// UninstallStrategy; BlockUninstallIfWorkloadsExist by default.
func (c *Config) UninstallStrategy() v1.KubeVirtUninstallStrategy {
	if s := c.prop(KeyUninstallStrategy); s != "" {
		return v1.KubeVirtUninstallStrategy(s)
	}
	return v1.UninstallStrategyBlockUninstallIfWorkloadsExist
}

// ProductName, ProductVersion and ProductComponent are the spec values as written
// ("" when unset). Unlike upstream's getters (which looked up lower-case keys that
// were never written, §2.4) they return what the spec says; whether a value is a
// valid label value is the metadata package's concern.
func (c *Config) ProductName() string      { return c.prop(KeyProductName) }
func (c *Config) ProductVersion() string   { return c.prop(KeyProductVersion) }
func (c *Config) ProductComponent() string { return c.prop(KeyProductComponent) }

// SynchronizationPort of virt-synchronization-controller; 9185 by default.
func (c *Config) SynchronizationPort() int32 {
	port, err := c.synchronizationPort()
	if err != nil {
		return DefaultSynchronizationPort
	}
	return port
}

func (c *Config) synchronizationPort() (int32, error) {
	raw := c.prop(KeySynchronizationPort)
	if raw == "" {
		return DefaultSynchronizationPort, nil
	}
	port, err := strconv.ParseInt(raw, 10, 32)
	if err != nil || port < 1 || port > 65535 {
		return 0, fmt.Errorf("deployment config: synchronizationPort %q is not a port number (1-65535)", raw)
	}
	return int32(port), nil
}

// MigrationNetwork is the NetworkAttachmentDefinition for migration traffic, or "".
func (c *Config) MigrationNetwork() string { return c.prop(KeyMigrationNetwork) }

// HypervisorName; kvm by default.
func (c *Config) HypervisorName() string {
	if h := c.prop(KeyHypervisorName); h != "" {
		return h
	}
	return defaultHypervisor
}

// Feature-gate derived switches (§2.5).
func (c *Config) PersistentReservationEnabled() bool  { return c.has(KeyPersistentReservationEnabled) }
func (c *Config) VirtTemplateDeploymentEnabled() bool { return c.has(KeyVirtTemplateDeploymentEnabled) }
func (c *Config) ExternalNetResourceInjection() bool  { return c.has(KeyExternalNetResourceInjection) }
func (c *Config) VMStatsCollectorEnabled() bool       { return c.has(KeyVMStatsCollectorEnabled) }
func (c *Config) PluginsEnabled() bool                { return c.has(KeyPluginsEnabled) }
func (c *Config) OptOutRoleAggregation() bool         { return c.has(KeyOptOutRoleAggregation) }
func (c *Config) DecentralizedLiveMigrationEnabled() bool {
	return c.has(KeyDecentralizedLiveMigrationEnabled)
}
func (c *Config) ContainerPathVolumesEnabled() bool { return c.has(KeyContainerPathVolumesEnabled) }

// CommonInstancetypesEnabled: the release's cluster instancetypes and preferences
// are written (unless configuration.commonInstancetypesDeployment turns them off).
func (c *Config) CommonInstancetypesEnabled() bool { return !c.has(KeyCommonInstancetypesDisabled) }

// DefaultMinTLSVersion is the minimum TLS version without a TLS configuration,
// as upstream.
const DefaultMinTLSVersion = v1.VersionTLS12

// TLS is the TLS configuration virt-template's components get as flags: the
// CR's as written, else upstream's default, VersionTLS12 and no cipher list
// (its kvtls.getTLSConfiguration).
func (c *Config) TLS() v1.TLSConfiguration {
	if c.TLSConfiguration != nil {
		return *c.TLSConfiguration.DeepCopy()
	}
	return v1.TLSConfiguration{MinTLSVersion: DefaultMinTLSVersion}
}

// ExportProxyEnabled: virt-exportproxy (its Deployment, PodDisruptionBudget and
// Route) is written; not when the release's operator writes it only with a
// feature gate that is off (v1.8 without VMExport listed).
func (c *Config) ExportProxyEnabled() bool { return !c.has(KeyExportProxyDisabled) }

// PassthroughEnv is PassthroughEnvVars as container env, sorted by name so
// generated objects are deterministic.
func (c *Config) PassthroughEnv() []corev1.EnvVar {
	if len(c.PassthroughEnvVars) == 0 {
		return nil
	}
	out := make([]corev1.EnvVar, 0, len(c.PassthroughEnvVars))
	for name, value := range c.PassthroughEnvVars {
		out = append(out, corev1.EnvVar{Name: name, Value: value})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Validate reports the first value that would make a created object invalid, so
// the getters never have to fail later.
func (c *Config) Validate() error {
	if _, invalidUTF8, err := c.canonical(false); err != nil || invalidUTF8 {
		// JSON cannot carry such text: the Job would compute a different ID.
		return fmt.Errorf("deployment config: some value is not valid UTF-8 text (check the operator's environment)")
	}
	switch p := c.prop(KeyImagePullPolicy); corev1.PullPolicy(p) {
	case "", corev1.PullAlways, corev1.PullNever, corev1.PullIfNotPresent:
	default:
		return fmt.Errorf("deployment config: imagePullPolicy %q is not Always, Never or IfNotPresent", p)
	}
	if _, err := c.imagePullSecrets(); err != nil {
		return err
	}
	if _, err := c.synchronizationPort(); err != nil {
		return err
	}
	if c.Infra != nil && c.Infra.Replicas != nil && *c.Infra.Replicas == 0 {
		return fmt.Errorf("deployment config: infra.replicas must not be 0")
	}
	if cc := c.CustomizeComponents; cc != nil {
		for i, p := range cc.Patches {
			switch p.Type {
			case v1.JSONPatchType, v1.MergePatchType, v1.StrategicMergePatchType:
			default:
				return fmt.Errorf("deployment config: customizeComponents.patches[%d].type %q is not json, merge or strategic", i, p.Type)
			}
		}
	}
	return nil
}
