package generate

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/release"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// Input is everything a strategy depends on.
type Input struct {
	// Config is the target deployment config (its ID names the strategy). The
	// operator's namespace is Config.Namespace: KubeVirt lives with its operator.
	Config *deployid.Config
	// MonitorNamespace is where Prometheus' ServiceAccount was found; "" means
	// no monitoring objects.
	MonitorNamespace string
}

// ErrUnknownRelease: the config's KubeVirt version is not of a release line the
// builtin generator knows; that release's own operator image generates it.
var ErrUnknownRelease = errors.New("not a KubeVirt release the builtin generator knows")

// Generate returns the strategy for in, or an error naming what is wrong with the
// input. It never changes in.Config.
func Generate(in Input) (*strategy.Strategy, error) {
	if err := validate(in); err != nil {
		return nil, err
	}
	rel, ok := release.Lookup(in.Config.KubeVirtVersion)
	if !ok {
		return nil, fmt.Errorf("generate: KubeVirt %q: %w (it knows %s)", in.Config.KubeVirtVersion, ErrUnknownRelease, release.Lines())
	}
	v := newView(in.Config, rel, in.MonitorNamespace)
	s := &strategy.Strategy{}
	for _, f := range v.files() {
		objs, err := render(rel, f, v)
		if err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
		for _, o := range objs {
			if err := s.Add(o); err != nil {
				return nil, fmt.Errorf("generate: %s: %w", f, err)
			}
		}
	}
	if err := attachSchemas(rel, s.CRDs); err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	addPullSecrets(s, in.Config.ImagePullSecrets())
	addPassthroughEnv(s, in.Config.PassthroughEnv())
	if in.Config.OptOutRoleAggregation() {
		optOutOfAggregation(s)
	}
	return s, nil
}

// ValidateMonitoring refuses the monitoring names of cfg that no object can
// carry, naming each: the monitoring namespace (where Prometheus'
// ServiceAccount was found, among spec.monitorNamespace or the defaults; ""
// for none), spec.serviceMonitorNamespace and, with a monitoring namespace,
// spec.monitorAccount. The webhook calls it for every namespace the detection
// could find, so that a spec the strategy Job would refuse is refused when it
// is written.
func ValidateMonitoring(cfg *deployid.Config, monitorNamespace string) error {
	for _, ns := range []struct{ what, value string }{
		{"monitor namespace", monitorNamespace},
		{"spec.serviceMonitorNamespace", cfg.ServiceMonitorNamespace()},
	} {
		if ns.value == "" {
			continue
		}
		if errs := validation.IsDNS1123Label(ns.value); len(errs) > 0 {
			return fmt.Errorf("%s %q is no namespace name: %s", ns.what, ns.value, strings.Join(errs, "; "))
		}
	}
	if monitorNamespace != "" {
		if errs := validation.IsDNS1123Subdomain(cfg.MonitorAccount()); len(errs) > 0 {
			return fmt.Errorf("spec.monitorAccount %q is no ServiceAccount name: %s", cfg.MonitorAccount(), strings.Join(errs, "; "))
		}
	}
	return nil
}

// validate rejects input that would produce invalid objects.
func validate(in Input) error {
	cfg := in.Config
	if cfg == nil {
		return errors.New("generate: no deployment config")
	}
	if cfg.Namespace == "" {
		return errors.New("generate: the deployment config has no namespace")
	}
	if errs := validation.IsDNS1123Label(cfg.Namespace); len(errs) > 0 {
		return fmt.Errorf("generate: namespace %q: %s", cfg.Namespace, strings.Join(errs, "; "))
	}
	if cfg.ID == "" {
		return errors.New("generate: the deployment config has no ID")
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	if err := ValidateMonitoring(cfg, in.MonitorNamespace); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	for _, c := range []deployid.Component{deployid.API, deployid.Controller, deployid.Handler, deployid.Launcher} {
		if strings.TrimSpace(cfg.Image(c)) == "" {
			return fmt.Errorf("generate: the deployment config has no image for %s", c)
		}
	}
	return nil
}
