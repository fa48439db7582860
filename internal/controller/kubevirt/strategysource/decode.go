package strategysource

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/virt-operator/virt-operator/internal/strategy"
)

// keepDecoded is how long a decoded strategy is kept after its last use.
// A rollout reads its strategies on every pass, seconds apart at most; at
// rest no pass reads them for minutes or days.
const keepDecoded = time.Minute

// decodeCache holds the strategies decoded from their ConfigMaps while they
// are in use: a rollout reconciles many times against the same one or two
// (the target's and the observed deployment's), and decoding ~100 objects
// each time is wasted work. A strategy not used for keepDecoded is dropped:
// the operator then holds it as its ConfigMap holds it (in the cache,
// compressed, a tenth of the 9 MB a decoded v1.9 strategy takes), and
// decodes it again when a pass needs it. Nothing downstream modifies a
// decoded strategy (apply.Prepare copies).
type decodeCache struct {
	mu      sync.Mutex
	entries [2]decodeEntry // the most recently decoded first
	// sweeping is the timer that drops the entries once unused; nil while
	// none is held.
	sweeping *time.Timer
}

type decodeEntry struct {
	key  string // ConfigMap name, UID and resourceVersion
	s    *strategy.Strategy
	used time.Time
}

// decode is cm's strategy, from the cache when cm has not changed.
func (s *Source) decode(cm *corev1.ConfigMap) (*strategy.Strategy, error) {
	key := cm.Name + "/" + string(cm.UID) + "/" + cm.ResourceVersion
	c := &s.decoded
	if held := c.get(key, time.Now()); held != nil {
		return held, nil
	}
	decoded, err := strategy.Decode(cm)
	if err != nil {
		return nil, err
	}
	c.put(key, decoded, time.Now())
	return decoded, nil
}

// get is the strategy held under key, marked used at now; nil if none is.
func (c *decodeCache) get(key string, now time.Time) *strategy.Strategy {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.entries {
		if e := &c.entries[i]; e.key == key && e.s != nil {
			e.used = now
			return e.s
		}
	}
	return nil
}

// put holds s under key (the older of the two entries goes), and arms the
// sweep.
func (c *decodeCache) put(key string, s *strategy.Strategy, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[1], c.entries[0] = c.entries[0], decodeEntry{key: key, s: s, used: now}
	if c.sweeping == nil {
		c.sweeping = time.AfterFunc(keepDecoded, func() { c.sweep(time.Now()) })
	}
}

// sweep drops the entries unused for keepDecoded at now, and looks again
// when the next one is due.
func (c *decodeCache) sweep(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next time.Duration
	for i := range c.entries {
		e := &c.entries[i]
		if e.s == nil {
			continue
		}
		if left := keepDecoded - now.Sub(e.used); left > 0 {
			if next == 0 || left < next {
				next = left
			}
			continue
		}
		*e = decodeEntry{}
	}
	if c.sweeping != nil {
		c.sweeping.Stop()
		c.sweeping = nil
	}
	if next > 0 {
		c.sweeping = time.AfterFunc(next, func() { c.sweep(time.Now()) })
	}
}

// held counts the decoded strategies held (for the tests).
func (c *decodeCache) held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.entries {
		if e.s != nil {
			n++
		}
	}
	return n
}
