package deployid

import (
	"regexp"
	"strings"
)

// Component names a container image the operator deploys.
type Component string

// The components, named as their images are (the part after the prefix).
const (
	Operator                  Component = "virt-operator"
	API                       Component = "virt-api"
	Controller                Component = "virt-controller"
	Handler                   Component = "virt-handler"
	Launcher                  Component = "virt-launcher"
	ExportProxy               Component = "virt-exportproxy"
	ExportServer              Component = "virt-exportserver"
	SynchronizationController Component = "virt-synchronization-controller"
	TemplateApiserver         Component = "virt-template-apiserver"
	TemplateController        Component = "virt-template-controller"
	GuestfsTools              Component = "libguestfs-tools"
	PrHelper                  Component = "pr-helper"
	SidecarShim               Component = "sidecar-shim"
)

// componentSources ties each component to its override env var and its field in
// ComponentImages, so FromKubeVirt and Image cannot disagree.
var componentSources = []struct {
	component Component
	envVar    string
	field     func(*ComponentImages) *string
}{
	{API, "VIRT_API_IMAGE", func(c *ComponentImages) *string { return &c.VirtApiImage }},
	{Controller, "VIRT_CONTROLLER_IMAGE", func(c *ComponentImages) *string { return &c.VirtControllerImage }},
	{Handler, "VIRT_HANDLER_IMAGE", func(c *ComponentImages) *string { return &c.VirtHandlerImage }},
	{Launcher, "VIRT_LAUNCHER_IMAGE", func(c *ComponentImages) *string { return &c.VirtLauncherImage }},
	{ExportProxy, "VIRT_EXPORTPROXY_IMAGE", func(c *ComponentImages) *string { return &c.VirtExportProxyImage }},
	{ExportServer, "VIRT_EXPORTSERVER_IMAGE", func(c *ComponentImages) *string { return &c.VirtExportServerImage }},
	{SynchronizationController, "VIRT_SYNCHRONIZATIONCONTROLLER_IMAGE", func(c *ComponentImages) *string { return &c.VirtSynchronizationControllerImage }},
	{TemplateApiserver, "VIRT_TEMPLATE_APISERVER_IMAGE", func(c *ComponentImages) *string { return &c.VirtTemplateApiserverImage }},
	{TemplateController, "VIRT_TEMPLATE_CONTROLLER_IMAGE", func(c *ComponentImages) *string { return &c.VirtTemplateControllerImage }},
	{GuestfsTools, "GS_IMAGE", func(c *ComponentImages) *string { return &c.GsImage }},
	{PrHelper, "PR_HELPER_IMAGE", func(c *ComponentImages) *string { return &c.PrHelperImage }},
	{SidecarShim, "SIDECAR_SHIM_IMAGE", func(c *ComponentImages) *string { return &c.SidecarShimImage }},
	{Operator, "", func(c *ComponentImages) *string { return &c.VirtOperatorImage }},
}

// Components lists every component with an image, operator last.
func Components() []Component {
	out := make([]Component, len(componentSources))
	for i, s := range componentSources {
		out[i] = s.component
	}
	return out
}

// Image is the effective image of a component: the override in ComponentImages if
// set (used verbatim, so a digest override stays a digest), else
// <registry>/<prefix><component>:<version>, or ...@sha256:<digest> when the version
// is itself a digest. An unknown component gives "".
func (c *Config) Image(comp Component) string {
	for _, s := range componentSources {
		if s.component != comp {
			continue
		}
		if img := *s.field(&c.ComponentImages); img != "" {
			return img
		}
		return buildImage(c.Registry, c.ImagePrefix+string(comp), c.KubeVirtVersion)
	}
	return ""
}

// buildImage joins registry, name and version; an empty registry gives a bare name
// rather than a leading "/".
func buildImage(registry, name, version string) string {
	img := name
	if registry != "" {
		img = registry + "/" + name
	}
	if version == "" {
		return img
	}
	if strings.HasPrefix(version, "sha256:") {
		return img + "@" + version
	}
	return img + ":" + version
}

// operatorImagePattern splits an operator image into registry (greedy: everything
// before the last '/' that precedes <prefix>virt-operator), prefix and suffix.
var operatorImagePattern = regexp.MustCompile(`^(.*)/(.*)virt-operator([@:].*)?$`)

// imageTag is the tag of an operator image matching operatorImagePattern
// ("name:tag" or "name:tag@sha256:..."); false for a digest alone, no tag, or no match.
func imageTag(image string) (string, bool) {
	m := operatorImagePattern.FindStringSubmatch(image)
	if m == nil || !strings.HasPrefix(m[3], ":") {
		return "", false
	}
	tag, _, _ := strings.Cut(m[3][1:], "@")
	return tag, tag != ""
}

// ImageAt is the image of comp at version, unless an override names it fully:
// for components versioned apart from KubeVirt (virt-template).
func (c *Config) ImageAt(comp Component, version string) string {
	for _, s := range componentSources {
		if s.component == comp {
			if img := *s.field(&c.ComponentImages); img != "" {
				return img
			}
		}
	}
	return buildImage(c.Registry, c.ImagePrefix+string(comp), version)
}

// parsedOperatorImage is what the operator image says about the installation.
type parsedOperatorImage struct {
	registry, prefix, version string
}

// parseOperatorImage applies upstream's rules (§2.3): a ":tag" suffix wins over
// KUBEVIRT_VERSION; a digest or no match falls back to KUBEVIRT_VERSION; no suffix
// at all, or nothing else, gives "latest". Ours differs only where upstream would
// produce nonsense: in "name:tag@sha256:..." the tag is the text before '@'.
func parseOperatorImage(image, envVersion string) parsedOperatorImage {
	fallback := envVersion
	if fallback == "" {
		fallback = "latest"
	}
	m := operatorImagePattern.FindStringSubmatch(image)
	if m == nil {
		return parsedOperatorImage{version: fallback}
	}
	p := parsedOperatorImage{registry: m[1], prefix: m[2], version: "latest"}
	switch suffix := m[3]; {
	case strings.HasPrefix(suffix, "@"):
		p.version = fallback
	case strings.HasPrefix(suffix, ":"):
		tag, _, _ := strings.Cut(suffix[1:], "@")
		if tag != "" {
			p.version = tag
		}
	}
	return p
}
