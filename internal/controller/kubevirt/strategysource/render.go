package strategysource

import (
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
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

// rendered remembers renderedEqual's answers. A ConfigMap not yet accepted
// (the target of a held upgrade) is compared on every pass, and each
// comparison renders the release again: about half a second of CPU and 240 MB
// allocated. For this binary the answer depends only on what renderKey holds,
// so one memory serves the process: a changed ConfigMap is a new key, never
// an old answer.
var rendered renderVerdicts

type renderVerdicts struct {
	mu      sync.Mutex
	entries [4]renderVerdict
	next    int // the entry the next answer replaces
}

// renderKey is what a comparison reads: the manifests (by digest) and how
// they are encoded, the config (the deployment ID fingerprints it) and the
// monitoring namespace.
type renderKey struct {
	manifests, encoding, id, monitorNS string
}

func renderKeyOf(cm *corev1.ConfigMap, cfg *deployid.Config, monitorNS string) renderKey {
	encoding, encoded := cm.Annotations[metadata.InstallStrategyConfigMapEncodingAnnotation]
	if !encoded {
		encoding = "none"
	}
	return renderKey{manifests: strategy.Digest(cm), encoding: encoding, id: cfg.ID, monitorNS: monitorNS}
}

type renderVerdict struct {
	key  renderKey
	same bool
}

func (v *renderVerdicts) get(key renderKey) (same, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, e := range v.entries {
		if e.key == key {
			return e.same, true
		}
	}
	return false, false
}

func (v *renderVerdicts) put(key renderKey, same bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.entries[v.next] = renderVerdict{key: key, same: same}
	v.next = (v.next + 1) % len(v.entries)
}
