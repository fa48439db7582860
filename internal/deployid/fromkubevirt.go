package deployid

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/release"
	"github.com/virt-operator/virt-operator/internal/version"
)

// Environment variables the operator reads (§2.2).
const (
	EnvVirtOperatorImage = "VIRT_OPERATOR_IMAGE"
	EnvOperatorImage     = "OPERATOR_IMAGE" // deprecated fallback
	EnvKubeVirtVersion   = "KUBEVIRT_VERSION"
	// PassthroughEnvPrefix marks variables copied, prefix stripped, into the components.
	PassthroughEnvPrefix = "KV_IO_EXTRA_ENV_"
)

// FromKubeVirt builds the target deployment config for kv, with ID set. It is the
// single place that decides which spec inputs are part of the ID (see the package
// comment); every spec field must be handled or deliberately left out here.
//
// It refuses, naming the field, a spec no deployment can be made of (checkSpec):
// an image tag or registry that makes no image, a synchronization port that is
// no port, a duration anywhere in the spec that is not a Go duration (also of the
// settings left out of the ID). The admission webhook calls it, so what the
// operator refuses is refused when it is written.
func FromKubeVirt(kv *v1.KubeVirt, env Env) (*Config, error) {
	if kv == nil {
		return nil, errors.New("deployment config: no KubeVirt given")
	}
	if env == nil {
		return nil, errors.New("deployment config: no environment given")
	}
	spec := &kv.Spec
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	cfg := &Config{Namespace: kv.Namespace}
	setImages(cfg, spec, env)

	passthrough, err := passthroughEnv(env)
	if err != nil {
		return nil, err
	}
	cfg.PassthroughEnvVars = passthrough

	props, err := specProperties(spec)
	if err != nil {
		return nil, err
	}
	for k, v := range featureGateProperties(&spec.Configuration, release.RulesFor(cfg.KubeVirtVersion)) {
		props[k] = v
	}
	cfg.AdditionalProperties = props

	cfg.CustomizeComponents = normalizedCustomize(spec.CustomizeComponents)
	cfg.Infra = normalizedComponentConfig(spec.Infra)
	cfg.Workloads = normalizedComponentConfig(spec.Workloads)
	cfg.TLSConfiguration = spec.Configuration.TLSConfiguration.DeepCopy() // {} is no flags, nil the default: not normalized

	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.ID = cfg.ComputeID()
	return cfg, nil
}

// DefaultRegistry holds KubeVirt's images when the operator's image does not say
// where they are (it is this operator's own image, not a KubeVirt release's).
const DefaultRegistry = "quay.io/kubevirt"

// setImages fills registry, prefix, version and component images (§2.2, §2.3).
//
// The operator image (VIRT_OPERATOR_IMAGE, else OPERATOR_IMAGE) names a KubeVirt
// release when it is not of this operator's own repository (version.Repository)
// and its tag reads as a release version (v1.9.0) other than this operator's
// own version, or, for a digest or an unparsable image, when
// KUBEVIRT_VERSION is set: then registry, prefix and version come from it as
// upstream reads them (the tag beats KUBEVIRT_VERSION). Otherwise it is this
// operator's own image and says nothing about KubeVirt: the version is
// KUBEVIRT_VERSION, else the default release (release.Default), from
// DefaultRegistry. spec.imageRegistry and spec.imageTag override both.
//
// virtOperatorImage is the image whose dump mode generates the strategy: this
// operator's own image for a release line the builtin generator knows, else the
// target release's own operator, <registry>/<prefix>virt-operator:<version>.
func setImages(cfg *Config, spec *v1.KubeVirtSpec, env Env) {
	operatorImage, ok := lookupNonEmpty(env, EnvVirtOperatorImage)
	if !ok {
		operatorImage, _ = lookupNonEmpty(env, EnvOperatorImage)
	}
	envVersion, _ := lookupNonEmpty(env, EnvKubeVirtVersion)
	parsed := parseOperatorImage(operatorImage, envVersion)
	if namesRelease(operatorImage, parsed, envVersion) {
		cfg.Registry, cfg.ImagePrefix, cfg.KubeVirtVersion = parsed.registry, parsed.prefix, parsed.version
	} else {
		cfg.Registry, cfg.KubeVirtVersion = DefaultRegistry, release.Default().Version
		if envVersion != "" {
			cfg.KubeVirtVersion = envVersion
		}
	}
	if spec.ImageRegistry != "" {
		cfg.Registry = spec.ImageRegistry
	}
	if spec.ImageTag != "" {
		cfg.KubeVirtVersion = spec.ImageTag
	}
	cfg.VirtOperatorImage = operatorImage
	if _, builtin := release.Lookup(cfg.KubeVirtVersion); !builtin || operatorImage == "" {
		cfg.VirtOperatorImage = buildImage(cfg.Registry, cfg.ImagePrefix+string(Operator), cfg.KubeVirtVersion)
	}
	// Overrides win over the spec, as upstream: they are full image references.
	for _, s := range componentSources {
		if s.envVar == "" {
			continue
		}
		if img, ok := lookupNonEmpty(env, s.envVar); ok {
			*s.field(&cfg.ComponentImages) = img
		}
	}
}

// namesRelease says whether the operator image is a KubeVirt release's (see
// setImages). An image of this operator's own repository never is: its tag is
// this operator's version, not KubeVirt's, even when it reads like one.
func namesRelease(image string, parsed parsedOperatorImage, envVersion string) bool {
	if ownRepository(image) {
		return false
	}
	if tag, ok := imageTag(image); ok {
		return release.IsVersion(tag) && tag != version.Version
	}
	return envVersion != "" && operatorImagePattern.MatchString(image)
}

// ownRepository: image (name[:tag][@digest]) is of version.Repository.
func ownRepository(image string) bool {
	name, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	return name == version.Repository
}

// passthroughEnv collects KV_IO_EXTRA_ENV_<NAME>=<value>. The value is everything
// after the first '=' (upstream truncates at a second '='; we keep "a=b" whole).
func passthroughEnv(env Env) (map[string]string, error) {
	var out map[string]string
	for _, entry := range env.Environ() {
		name, value, _ := strings.Cut(entry, "=")
		if !strings.HasPrefix(name, PassthroughEnvPrefix) {
			continue
		}
		stripped := strings.TrimPrefix(name, PassthroughEnvPrefix)
		if stripped == "" {
			return nil, fmt.Errorf("deployment config: environment variable %s has no name after the prefix", name)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[stripped] = value
	}
	return out, nil
}

// specProperties maps the string-valued spec inputs to upstream's keys. Empty
// values are left out: "" and absent mean the same.
func specProperties(spec *v1.KubeVirtSpec) (map[string]string, error) {
	props := map[string]string{}
	put := func(key, value string) {
		if value != "" {
			props[key] = value
		}
	}
	put(KeyImagePullPolicy, string(spec.ImagePullPolicy))
	if len(spec.ImagePullSecrets) > 0 {
		raw, err := json.Marshal(spec.ImagePullSecrets)
		if err != nil {
			return nil, fmt.Errorf("deployment config: spec.imagePullSecrets: %w", err)
		}
		props[KeyImagePullSecrets] = string(raw)
	}
	put(KeyMonitorNamespace, spec.MonitorNamespace)
	put(KeyServiceMonitorNamespace, spec.ServiceMonitorNamespace)
	put(KeyMonitorAccount, spec.MonitorAccount)
	put(KeyUninstallStrategy, string(spec.UninstallStrategy))
	put(KeyProductName, spec.ProductName)
	put(KeyProductVersion, spec.ProductVersion)
	put(KeyProductComponent, spec.ProductComponent)
	put(KeySynchronizationPort, spec.SynchronizationPort)
	if m := spec.Configuration.MigrationConfiguration; m != nil && m.Network != nil {
		put(KeyMigrationNetwork, *m.Network)
	}
	return props, nil
}

// normalizedCustomize copies cc, or returns nil when it customises nothing, so an
// empty block and no block give the same ID.
func normalizedCustomize(cc v1.CustomizeComponents) *v1.CustomizeComponents {
	out := cc.DeepCopy()
	if encodesEmpty(out.Flags) {
		out.Flags = nil
	}
	if encodesEmpty(out) {
		return nil
	}
	return out
}

// normalizedComponentConfig copies cc, or returns nil when it sets nothing.
func normalizedComponentConfig(cc *v1.ComponentConfig) *v1.ComponentConfig {
	out := cc.DeepCopy()
	if out == nil {
		return nil
	}
	if np := out.NodePlacement; np != nil {
		if encodesEmpty(np.Affinity) {
			np.Affinity = nil
		}
		if encodesEmpty(np) {
			out.NodePlacement = nil
		}
	}
	if encodesEmpty(out) {
		return nil
	}
	return out
}

// encodesEmpty reports whether v serialises to an empty JSON object. Asking the
// encoder rather than listing fields means a field added to these types later can
// never be mistaken for "empty" and dropped. Only whole blocks the spec documents as
// optional are checked; inner objects such as a labelSelector {} (which matches
// everything) are never touched.
func encodesEmpty(v any) bool {
	raw, err := json.Marshal(v)
	return err == nil && string(raw) == "{}"
}
