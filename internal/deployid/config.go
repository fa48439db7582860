package deployid

import (
	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Config is the deployment config: the complete input of install-strategy
// generation and of everything applied on top of the strategy. Its JSON field names
// match upstream's KubeVirtDeploymentConfig for the fields upstream has; the typed
// CustomizeComponents, Infra, Workloads and TLSConfiguration fields are ours
// (upstream's reflection dropped the first three; upstream's operator reads the
// last from the CR when it writes virt-template). Every field is part of the ID except ID itself.
type Config struct {
	ID              string `json:"id,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Registry        string `json:"registry,omitempty"`
	ImagePrefix     string `json:"imagePrefix,omitempty"`
	KubeVirtVersion string `json:"kubeVirtVersion,omitempty"`

	ComponentImages

	// AdditionalProperties holds the string-valued spec inputs and the derived
	// feature-gate keys, under upstream's key names (the Key* constants). Read it
	// through the typed getters, never by hand.
	AdditionalProperties map[string]string `json:"additionalProperties,omitempty"`
	// PassthroughEnvVars are the operator's KV_IO_EXTRA_ENV_* variables, prefix
	// stripped, injected into the components.
	PassthroughEnvVars map[string]string `json:"passthroughEnvVars,omitempty"`

	// CustomizeComponents are the patches and flags applied to generated objects.
	CustomizeComponents *v1.CustomizeComponents `json:"customizeComponents,omitempty"`
	// Infra places and sizes the control-plane components.
	Infra *v1.ComponentConfig `json:"infra,omitempty"`
	// Workloads places virt-handler.
	Workloads *v1.ComponentConfig `json:"workloads,omitempty"`
	// TLSConfiguration is spec.configuration.tlsConfiguration as written: the
	// operator passes it to virt-template's components as flags (TLS). An empty
	// one is not an absent one: it passes no flags, an absent one upstream's
	// default.
	TLSConfiguration *v1.TLSConfiguration `json:"tlsConfiguration,omitempty"`
}

// ComponentImages are full image overrides from the operator's environment (and
// the computed operator image). Empty means "build the image from registry, prefix
// and version"; use Config.Image to get the effective image.
type ComponentImages struct {
	VirtOperatorImage                  string `json:"virtOperatorImage,omitempty"`
	VirtApiImage                       string `json:"virtApiImage,omitempty"`
	VirtControllerImage                string `json:"virtControllerImage,omitempty"`
	VirtHandlerImage                   string `json:"virtHandlerImage,omitempty"`
	VirtLauncherImage                  string `json:"virtLauncherImage,omitempty"`
	VirtExportProxyImage               string `json:"virtExportProxyImage,omitempty"`
	VirtExportServerImage              string `json:"virtExportServerImage,omitempty"`
	VirtSynchronizationControllerImage string `json:"virtSynchronizationControllerImage,omitempty"`
	VirtTemplateApiserverImage         string `json:"virtTemplateApiserverImage,omitempty"`
	VirtTemplateControllerImage        string `json:"virtTemplateControllerImage,omitempty"`
	GsImage                            string `json:"GsImage,omitempty"`
	PrHelperImage                      string `json:"PrHelperImage,omitempty"`
	SidecarShimImage                   string `json:"SidecarShimImage,omitempty"`
}

// Keys of Config.AdditionalProperties. The spec-derived keys are upstream's Go field
// names; the feature-gate keys are upstream's derived keys (§2.5) plus two of ours
// (DecentralizedLiveMigrationEnabled, ContainerPathVolumesEnabled) because those
// gates add or remove components too.
const (
	KeyImagePullPolicy         = "ImagePullPolicy"
	KeyImagePullSecrets        = "ImagePullSecrets" // JSON array of {"name": ...}
	KeyMonitorNamespace        = "MonitorNamespace"
	KeyServiceMonitorNamespace = "ServiceMonitorNamespace"
	KeyMonitorAccount          = "MonitorAccount"
	KeyUninstallStrategy       = "UninstallStrategy"
	KeyProductName             = "ProductName"
	KeyProductVersion          = "ProductVersion"
	KeyProductComponent        = "ProductComponent"
	KeySynchronizationPort     = "SynchronizationPort"
	KeyMigrationNetwork        = "MigrationNetwork"
	KeyHypervisorName          = "HypervisorName"

	KeyPersistentReservationEnabled      = "PersistentReservationEnabled"
	KeyVirtTemplateDeploymentEnabled     = "VirtTemplateDeploymentEnabled"
	KeyExternalNetResourceInjection      = "ExternalNetResourceInjection"
	KeyVMStatsCollectorEnabled           = "VMStatsCollectorEnabled"
	KeyPluginsEnabled                    = "PluginsEnabled"
	KeyOptOutRoleAggregation             = "OptOutRoleAggregation"
	KeyDecentralizedLiveMigrationEnabled = "DecentralizedLiveMigrationEnabled"
	KeyContainerPathVolumesEnabled       = "ContainerPathVolumesEnabled"
	// KeyCommonInstancetypesDisabled: configuration.commonInstancetypesDeployment
	// is off, so the release's cluster instancetypes and preferences are not written.
	KeyCommonInstancetypesDisabled = "CommonInstancetypesDisabled"
	// KeyExportProxyDisabled: the release's operator writes virt-exportproxy only
	// with a gate (release.Release.ExportProxyGate) that is off. Ours: absent
	// wherever the export proxy runs (v1.9), so those IDs are unchanged by it.
	KeyExportProxyDisabled = "ExportProxyDisabled"
)

// flagOn is the value of a feature-gate presence key. Readers test presence only;
// a non-empty value keeps the rule "an empty value is the same as no key".
const flagOn = "true"

// DeepCopy returns an independent copy of c.
func (c *Config) DeepCopy() *Config {
	if c == nil {
		return nil
	}
	out := *c
	out.AdditionalProperties = copyMap(c.AdditionalProperties)
	out.PassthroughEnvVars = copyMap(c.PassthroughEnvVars)
	out.CustomizeComponents = c.CustomizeComponents.DeepCopy()
	out.Infra = c.Infra.DeepCopy()
	out.Workloads = c.Workloads.DeepCopy()
	out.TLSConfiguration = c.TLSConfiguration.DeepCopy()
	return &out
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
