package strategysource

import (
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

// renderedEqual: decoded is exactly this operator's rendering of cfg's release
// for the monitoring namespace monitorNS: both render the same manifests,
// compared by their digests (each is 4 MB of YAML, and a comparison held
// both). A rendering that fails (a config the generator refuses) is an
// error, which the caller turns into a refusal.
func renderedEqual(decoded *strategy.Strategy, cfg *deployid.Config, monitorNS string) (bool, error) {
	got, err := strategy.ManifestsDigest(decoded)
	if err != nil {
		return false, err
	}
	rendered, err := generate.Generate(generate.Input{Config: cfg, MonitorNamespace: monitorNS})
	if err != nil {
		return false, err
	}
	want, err := strategy.ManifestsDigest(rendered)
	if err != nil {
		return false, err
	}
	return want == got, nil
}
