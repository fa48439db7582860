package strategysource

import (
	"bytes"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

// renderedEqual: decoded is exactly this operator's rendering of cfg's release
// for the monitoring namespace monitorNS. A rendering that fails (a config the
// generator refuses) is an error, which the caller turns into a refusal.
func renderedEqual(decoded *strategy.Strategy, cfg *deployid.Config, monitorNS string) (bool, error) {
	rendered, err := generate.Generate(generate.Input{Config: cfg, MonitorNamespace: monitorNS})
	if err != nil {
		return false, err
	}
	want, err := strategy.Manifests(rendered)
	if err != nil {
		return false, err
	}
	got, err := strategy.Manifests(decoded)
	if err != nil {
		return false, err
	}
	return bytes.Equal(want, got), nil
}
