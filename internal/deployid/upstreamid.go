package deployid

import (
	"crypto/sha1" // #nosec G505 -- upstream's identifier is a SHA-1; reproduced, not relied on for security
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/release"
)

// GateConfigurableHypervisor lets upstream's operator take its hypervisor
// from configuration.hypervisors, which this operator's API does not have.
const GateConfigurableHypervisor = "ConfigurableHypervisor"

// UpstreamTarget is the deployment KubeVirt's own operator targets for a
// KubeVirt CR: what it records in status.targetKubeVirtVersion,
// targetKubeVirtRegistry and targetDeploymentID, and stamps as the
// install-strategy annotations of every object it writes. Its ID is not this
// operator's ID of the same CR: upstream hashes other inputs, another way.
type UpstreamTarget struct {
	Version, Registry, ID string
	// OperatorRelease is the release of upstream's operator whose rules computed it.
	OperatorRelease string
}

// upstreamLine is what sets one release line's operator apart when it derives
// its deployment config (v1.8.0 to v1.8.4 alike).
type upstreamLine struct {
	// persistentReservationConfig: persistentReservationConfiguration.enabled,
	// when set, decides before the listed gate (v1.8's API has no such field).
	persistentReservationConfig bool
	// statsAndPlugins: the VMStatsCollector and Plugins gates have keys.
	statsAndPlugins bool
}

var upstreamLines = map[string]upstreamLine{
	"v1.9": {persistentReservationConfig: true, statsAndPlugins: true},
	"v1.8": {},
}

// upstreamComponentImages are upstream's ComponentImages fields after
// VirtOperatorImage, in its order (the hash concatenates them in it), each
// with the environment variable that sets it.
var upstreamComponentImages = []struct{ field, envVar string }{
	{"VirtApiImage", "VIRT_API_IMAGE"},
	{"VirtControllerImage", "VIRT_CONTROLLER_IMAGE"},
	{"VirtHandlerImage", "VIRT_HANDLER_IMAGE"},
	{"VirtLauncherImage", "VIRT_LAUNCHER_IMAGE"},
	{"VirtExportProxyImage", "VIRT_EXPORTPROXY_IMAGE"},
	{"VirtExportServerImage", "VIRT_EXPORTSERVER_IMAGE"},
	{"VirtSynchronizationControllerImage", "VIRT_SYNCHRONIZATIONCONTROLLER_IMAGE"},
	{"VirtTemplateApiserverImage", "VIRT_TEMPLATE_APISERVER_IMAGE"},
	{"VirtTemplateControllerImage", "VIRT_TEMPLATE_CONTROLLER_IMAGE"},
	{"GsImage", "GS_IMAGE"},
	{"PrHelperImage", "PR_HELPER_IMAGE"},
	{"SidecarShimImage", "SIDECAR_SHIM_IMAGE"},
}

// UpstreamTargetOf is the target upstream's v1.8 or v1.9 operator computes
// for kv when its process environment is env (its Deployment's:
// VIRT_OPERATOR_IMAGE, KUBEVIRT_VERSION, VIRT_*_IMAGE, KV_IO_EXTRA_ENV_*).
// hypervisors are the names listed in spec.configuration.hypervisors, which
// this operator's API does not carry. It refuses, saying why, an environment
// that names no operator image, or a release of upstream's operator whose
// rules are not known here.
func UpstreamTargetOf(kv *v1.KubeVirt, hypervisors []string, env Env) (UpstreamTarget, error) {
	if kv == nil || env == nil {
		return UpstreamTarget{}, errors.New("upstream's deployment: no KubeVirt or no environment given")
	}
	image, ok := lookupNonEmpty(env, EnvVirtOperatorImage)
	if !ok {
		image, ok = lookupNonEmpty(env, EnvOperatorImage)
	}
	if !ok {
		return UpstreamTarget{}, fmt.Errorf("upstream's deployment: its operator's environment sets no %s (the operator does not start without it)", EnvVirtOperatorImage)
	}
	envVersion, _ := lookupNonEmpty(env, EnvKubeVirtVersion)
	operatorRelease, rules, line, err := upstreamOperatorRules(image, envVersion)
	if err != nil {
		return UpstreamTarget{}, err
	}
	props, err := upstreamProperties(&kv.Spec, hypervisors, rules, line)
	if err != nil {
		return UpstreamTarget{}, err
	}

	// Registry, prefix and version as upstream's getConfig reads them. Where
	// this operator reads them otherwise (a digest after a tag), upstream's
	// reading is kept: it is its ID that is wanted.
	kubeVirtVersion := envVersion
	if kubeVirtVersion == "" {
		kubeVirtVersion = "latest"
	}
	registry, prefix, tag := "", "", kubeVirtVersion
	if m := operatorImagePattern.FindStringSubmatch(image); m != nil {
		registry, prefix = m[1], m[2]
		switch suffix := m[3]; {
		case suffix == "":
			tag = "latest"
		case strings.HasPrefix(suffix, ":"):
			tag = suffix[1:]
		}
	}
	operatorImage := image
	if kv.Spec.ImageRegistry != "" || kv.Spec.ImageTag != "" {
		if kv.Spec.ImageRegistry != "" {
			registry = kv.Spec.ImageRegistry
		}
		if kv.Spec.ImageTag != "" {
			tag = kv.Spec.ImageTag
		}
		operatorImage = registry + "/" + string(Operator) + ":" + tag // upstream leaves the prefix out here
	}

	// The ID is the SHA-1 of upstream's config written out field by field, in
	// its struct order: each field's name, then its value; a map's entries
	// sorted by key, those with an empty key left out.
	var b strings.Builder
	field := func(name, value string) { b.WriteString(name); b.WriteString(value) }
	field("ID", "")
	field("Namespace", kv.Namespace)
	field("Registry", registry)
	field("ImagePrefix", prefix)
	field("KubeVirtVersion", tag)
	b.WriteString("ComponentImages")
	field("VirtOperatorImage", operatorImage)
	for _, c := range upstreamComponentImages {
		value, _ := lookupNonEmpty(env, c.envVar)
		field(c.field, value)
	}
	writeSortedMap(&b, "AdditionalProperties", props)
	writeSortedMap(&b, "PassthroughEnvVars", upstreamPassthrough(env))
	sum := sha1.Sum([]byte(b.String())) // #nosec G401 -- see the import
	return UpstreamTarget{Version: tag, Registry: registry, ID: hex.EncodeToString(sum[:]), OperatorRelease: operatorRelease}, nil
}

// upstreamOperatorRules finds the release of upstream's operator (its image's
// tag, else KUBEVIRT_VERSION) and the rules of its line.
func upstreamOperatorRules(image, envVersion string) (string, *release.Release, upstreamLine, error) {
	version, ok := imageTag(image)
	if !ok || !release.IsVersion(version) {
		version = envVersion
	}
	if !release.IsVersion(version) {
		return "", nil, upstreamLine{}, fmt.Errorf("upstream's deployment: its operator image %q names no release (a tag like v1.9.0) and %s does not either: which operator computes the ID is not known", image, EnvKubeVirtVersion)
	}
	rules, known := release.Lookup(version)
	var line upstreamLine
	if known {
		line, known = upstreamLines[rules.Line]
	}
	if !known {
		return "", nil, upstreamLine{}, fmt.Errorf("upstream's deployment: the identifier of upstream's %s operator is not known here (known: %s)", version, release.Lines())
	}
	return version, rules, line, nil
}

// upstreamProperties is upstream's additionalProperties for spec: every field
// of its KubeVirtSpec but imageTag and imageRegistry, a string field by value
// ("" included), imagePullSecrets as JSON, any other field as a placeholder
// naming its Go type whatever it holds; then the keys derived from the
// configuration, by the gate rules of upstream's operator.
func upstreamProperties(spec *v1.KubeVirtSpec, hypervisors []string, rules *release.Release, line upstreamLine) (map[string]string, error) {
	secrets, err := json.Marshal(spec.ImagePullSecrets)
	if err != nil {
		return nil, fmt.Errorf("upstream's deployment: spec.imagePullSecrets: %w", err)
	}
	placeholder := func(goType string) string { return "<" + goType + " Value>" }
	props := map[string]string{
		"ImagePullPolicy":             string(spec.ImagePullPolicy),
		"ImagePullSecrets":            string(secrets),
		"MonitorNamespace":            spec.MonitorNamespace,
		"ServiceMonitorNamespace":     spec.ServiceMonitorNamespace,
		"MonitorAccount":              spec.MonitorAccount,
		"WorkloadUpdateStrategy":      placeholder("v1.KubeVirtWorkloadUpdateStrategy"),
		"UninstallStrategy":           string(spec.UninstallStrategy),
		"CertificateRotationStrategy": placeholder("v1.KubeVirtCertificateRotateStrategy"),
		"ProductVersion":              spec.ProductVersion,
		"ProductName":                 spec.ProductName,
		"ProductComponent":            spec.ProductComponent,
		"SynchronizationPort":         spec.SynchronizationPort,
		"Configuration":               placeholder("v1.KubeVirtConfiguration"),
		"Infra":                       placeholder("*v1.ComponentConfig"),
		"Workloads":                   placeholder("*v1.ComponentConfig"),
		"CustomizeComponents":         placeholder("v1.CustomizeComponents"),
	}
	c := &spec.Configuration
	if m := c.MigrationConfiguration; m != nil && m.Network != nil {
		props[KeyMigrationNetwork] = *m.Network
	}
	var enabled, disabled []string
	if d := c.DeveloperConfiguration; d != nil {
		enabled, disabled = d.FeatureGates, d.DisabledFeatureGates
	}
	on := func(gate string) bool { return rules.GateEnabled(gate, enabled, disabled) }
	set := func(key string, value bool) {
		if value {
			props[key] = "" // upstream's presence keys carry ""
		}
	}
	if pr := c.PersistentReservationConfiguration; line.persistentReservationConfig && pr != nil && pr.Enabled != nil {
		set(KeyPersistentReservationEnabled, *pr.Enabled)
	} else {
		set(KeyPersistentReservationEnabled, slices.Contains(enabled, GatePersistentReservation))
	}
	templateWanted := c.VirtTemplateDeployment == nil || c.VirtTemplateDeployment.Enabled == nil || *c.VirtTemplateDeployment.Enabled
	set(KeyVirtTemplateDeploymentEnabled, on(GateTemplate) && templateWanted)
	set(KeyExternalNetResourceInjection, on(GateExternalNetResourceInject))
	props[KeyHypervisorName] = defaultHypervisor
	if on(GateConfigurableHypervisor) && len(hypervisors) > 0 {
		props[KeyHypervisorName] = hypervisors[0]
	}
	if line.statsAndPlugins {
		set(KeyVMStatsCollectorEnabled, on(GateVMStatsCollector))
		set(KeyPluginsEnabled, on(GatePlugins))
	}
	manual := c.RoleAggregationStrategy != nil && *c.RoleAggregationStrategy == RoleAggregationManual
	set(KeyOptOutRoleAggregation, on(GateOptOutRoleAggregation) && manual)
	return props, nil
}

// upstreamPassthrough is KV_IO_EXTRA_ENV_<NAME>=<value> as upstream reads it:
// the value ends at a second '=' (this operator's passthroughEnv keeps it).
func upstreamPassthrough(env Env) map[string]string {
	out := map[string]string{}
	for _, entry := range env.Environ() {
		if !strings.HasPrefix(entry, PassthroughEnvPrefix) {
			continue
		}
		parts := strings.Split(entry, "=")
		value := ""
		if len(parts) > 1 {
			value = parts[1]
		}
		out[strings.TrimPrefix(parts[0], PassthroughEnvPrefix)] = value
	}
	return out
}

func writeSortedMap(b *strings.Builder, name string, m map[string]string) {
	b.WriteString(name)
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteString(m[k])
	}
}
