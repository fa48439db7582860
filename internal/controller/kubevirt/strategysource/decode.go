package strategysource

import (
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/virt-operator/virt-operator/internal/strategy"
)

// decodeCache holds the last strategies decoded from their ConfigMaps: a
// rollout reconciles many times against the same one or two (the target's and
// the observed deployment's), and decoding ~100 objects each time is wasted
// work. Nothing downstream modifies them (apply.Prepare copies).
type decodeCache struct {
	mu      sync.Mutex
	entries [2]decodeEntry // the newest first
}

type decodeEntry struct {
	key string // ConfigMap name, UID and resourceVersion
	s   *strategy.Strategy
}

// decode is cm's strategy, from the cache when cm has not changed.
func (s *Source) decode(cm *corev1.ConfigMap) (*strategy.Strategy, error) {
	key := cm.Name + "/" + string(cm.UID) + "/" + cm.ResourceVersion
	c := &s.decoded
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.key == key && e.s != nil {
			return e.s, nil
		}
	}
	decoded, err := strategy.Decode(cm)
	if err != nil {
		return nil, err
	}
	c.entries[1], c.entries[0] = c.entries[0], decodeEntry{key: key, s: decoded}
	return decoded, nil
}
