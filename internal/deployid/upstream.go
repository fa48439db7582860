package deployid

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// upstreamKeys are the additionalProperties keys upstream's operator reads; the
// presence keys among them carry "" there (our canonical form writes "true").
var upstreamKeys = map[string]bool{
	KeyImagePullPolicy: false, KeyImagePullSecrets: false, KeyMonitorNamespace: false,
	KeyServiceMonitorNamespace: false, KeyMonitorAccount: false, KeyUninstallStrategy: false,
	KeyProductName: false, KeyProductVersion: false, KeyProductComponent: false,
	KeySynchronizationPort: false, KeyMigrationNetwork: false, KeyHypervisorName: false,

	KeyPersistentReservationEnabled: true, KeyVirtTemplateDeploymentEnabled: true,
	KeyExternalNetResourceInjection: true, KeyVMStatsCollectorEnabled: true,
	KeyPluginsEnabled: true, KeyOptOutRoleAggregation: true,
}

// upstreamConfig is upstream's KubeVirtDeploymentConfig as JSON: our Config without
// the fields upstream does not have.
type upstreamConfig struct {
	ID              string `json:"id,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Registry        string `json:"registry,omitempty"`
	ImagePrefix     string `json:"imagePrefix,omitempty"`
	KubeVirtVersion string `json:"kubeVirtVersion,omitempty"`
	ComponentImages
	AdditionalProperties map[string]string `json:"additionalProperties,omitempty"`
	PassthroughEnvVars   map[string]string `json:"passthroughEnvVars,omitempty"`
}

// UpstreamJSON is the config in upstream's TARGET_DEPLOYMENT_CONFIG shape, with
// this config's id: what the install-strategy Job hands to any release's
// `virt-operator --dump-install-strategy`, ours or upstream's own. It holds exactly
// what shapes the strategy; customizeComponents, infra and workloads are applied
// by the operator afterwards and are not in it.
func (c *Config) UpstreamJSON() string {
	u := upstreamConfig{
		ID: c.ID, Namespace: c.Namespace, Registry: c.Registry, ImagePrefix: c.ImagePrefix,
		KubeVirtVersion: c.KubeVirtVersion, ComponentImages: c.ComponentImages,
		PassthroughEnvVars: c.PassthroughEnvVars,
	}
	for k, v := range c.AdditionalProperties {
		presence, known := upstreamKeys[k]
		switch {
		case !known || v == "":
		case presence:
			u.props()[k] = ""
		default:
			u.props()[k] = v
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&u); err != nil {
		panic(fmt.Sprintf("deployid: upstream config is not JSON-encodable: %v", err)) // plain strings only
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func (u *upstreamConfig) props() map[string]string {
	if u.AdditionalProperties == nil {
		u.AdditionalProperties = map[string]string{}
	}
	return u.AdditionalProperties
}

// ParseUpstream reads a config in upstream's shape (UpstreamJSON, or what upstream's
// own operator passes to its Job). The id is taken as given: it names the strategy
// the operator looks for, and it hashes inputs (customizeComponents, placement) that
// this shape does not carry, so it cannot be recomputed here. Presence keys are
// normalised to our form; unknown fields are ignored, as upstream ignores them.
func ParseUpstream(jsonText string) (*Config, error) {
	if strings.TrimSpace(jsonText) == "" {
		return nil, fmt.Errorf("deployment config: no config provided")
	}
	var u upstreamConfig
	if err := json.Unmarshal([]byte(jsonText), &u); err != nil {
		return nil, fmt.Errorf("deployment config: invalid JSON: %w", err)
	}
	if u.ID == "" {
		return nil, fmt.Errorf("deployment config: no id")
	}
	cfg := &Config{
		ID: u.ID, Namespace: u.Namespace, Registry: u.Registry, ImagePrefix: u.ImagePrefix,
		KubeVirtVersion: u.KubeVirtVersion, ComponentImages: u.ComponentImages,
		PassthroughEnvVars: u.PassthroughEnvVars,
	}
	for k, v := range u.AdditionalProperties {
		if upstreamKeys[k] {
			v = flagOn
		}
		if v != "" {
			if cfg.AdditionalProperties == nil {
				cfg.AdditionalProperties = map[string]string{}
			}
			cfg.AdditionalProperties[k] = v
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}
