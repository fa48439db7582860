package generate

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"text/template"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/release"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// view is what a release file sees of the deployment config. Fields are the
// placeholders and switches the files use; image is a function.
type view struct {
	// Namespace holds KubeVirt; OperatorNamespace the operator (the same here:
	// the operator installs into its own namespace).
	Namespace, OperatorNamespace string
	// Version is the KubeVirt version, for the app.kubernetes.io/version labels.
	Version    string
	PullPolicy string
	// PullSecrets: virt-handler then keeps the launcher image pulled with a
	// holder container (its pods cannot use the secrets themselves).
	PullSecrets bool

	MonitorNamespace, ServiceMonitorNamespace, MonitorAccount string

	SynchronizationPort int32
	// MigrationNetwork joins virt-handler and the synchronization controller to
	// that NetworkAttachmentDefinition as interface migration0.
	MigrationNetwork             string
	PersistentReservation        bool
	ExternalNetResourceInjection bool
	VMStatsCollector             bool

	plugins, virtTemplate bool
	cfg                   *deployid.Config
	rel                   *release.Release
}

func newView(cfg *deployid.Config, rel *release.Release, monitorNamespace string) *view {
	v := &view{
		Namespace: cfg.Namespace, OperatorNamespace: cfg.Namespace,
		Version:                      cfg.KubeVirtVersion,
		PullPolicy:                   string(cfg.ImagePullPolicy()),
		PullSecrets:                  len(cfg.ImagePullSecrets()) > 0,
		MonitorNamespace:             monitorNamespace,
		ServiceMonitorNamespace:      cfg.ServiceMonitorNamespace(),
		MonitorAccount:               cfg.MonitorAccount(),
		SynchronizationPort:          cfg.SynchronizationPort(),
		MigrationNetwork:             cfg.MigrationNetwork(),
		PersistentReservation:        cfg.PersistentReservationEnabled(),
		ExternalNetResourceInjection: cfg.ExternalNetResourceInjection(),
		VMStatsCollector:             cfg.VMStatsCollectorEnabled(),
		plugins:                      cfg.PluginsEnabled(),
		virtTemplate:                 cfg.VirtTemplateDeploymentEnabled(),
		cfg:                          cfg,
		rel:                          rel,
	}
	if v.ServiceMonitorNamespace == "" {
		v.ServiceMonitorNamespace = monitorNamespace
	}
	return v
}

// files are the release files this config installs, in order. A file a release
// does not have (plugins.yaml before v1.9) is skipped by render.
func (v *view) files() []string {
	out := []string{"crds.yaml", "core.yaml"}
	if v.MonitorNamespace != "" {
		out = append(out, "monitoring.yaml")
	}
	if v.plugins {
		out = append(out, "plugins.yaml")
	}
	if v.virtTemplate {
		out = append(out, "virt-template.yaml")
	}
	return append(out, "instancetypes.yaml", "preferences.yaml")
}

// image is the image of a component named as its image is (virt-api,
// pr-helper): an environment override, else built from registry, prefix and the
// KubeVirt version, or the release's own version of that component.
func (v *view) image(name string) (string, error) {
	comp := deployid.Component(name)
	if !isComponent(comp) {
		return "", fmt.Errorf("unknown component image %q", name)
	}
	if version, ok := v.rel.ComponentVersions[name]; ok {
		return v.cfg.ImageAt(comp, version), nil
	}
	return v.cfg.Image(comp), nil
}

func isComponent(c deployid.Component) bool {
	for _, known := range deployid.Components() {
		if known == c {
			return true
		}
	}
	return false
}

// render executes one release file and parses the objects it yields.
func render(rel *release.Release, name string, v *view) ([]client.Object, error) {
	raw, err := rel.File(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	tmpl, err := template.New(name).Delims("[[", "]]").Option("missingkey=error").
		Funcs(template.FuncMap{"image": v.image}).Parse(string(raw))
	if err != nil {
		return nil, fmt.Errorf("release %s %s: %w", rel.Line, name, err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, v); err != nil {
		return nil, fmt.Errorf("release %s %s: %w", rel.Line, name, err)
	}
	objs, err := strategy.ParseObjects(out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("release %s %s: %w", rel.Line, name, err)
	}
	return objs, nil
}
