// Package absentkinds owns a RESTMapper that remembers, for a few API groups,
// that the cluster does not serve them. Off OpenShift, every reconcile asks
// whether SecurityContextConstraints and Routes are served, and the dynamic
// mapper answers a kind it does not know by asking the API server again: at
// a reconcile per DaemonSet event during a rollout that is several discovery
// requests a second, for an answer that does not change. An absence is kept
// for TTL: a cluster does not turn into OpenShift, and OpenShift serves both
// groups from its start.
package absentkinds

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OpenShiftGroups are the groups whose absence is worth remembering: served by
// OpenShift's own API server, never by this operator's CRDs.
var OpenShiftGroups = []string{"security.openshift.io", "route.openshift.io"}

// TTL is how long an absence is believed: what bounds the wait for one of the
// groups that appears (a test that adds them as CRDs).
const TTL = time.Minute

// Mapper is a meta.RESTMapper that answers "no match" for a remembered absent
// kind of one of its groups without asking its delegate.
type Mapper struct {
	meta.RESTMapper
	groups map[string]bool
	now    func() time.Time

	mu     sync.Mutex
	absent map[schema.GroupKind]time.Time // when the delegate last said no
}

// New wraps delegate, remembering absences in groups only.
func New(delegate meta.RESTMapper, groups []string, now func() time.Time) *Mapper {
	m := &Mapper{RESTMapper: delegate, groups: map[string]bool{}, now: now, absent: map[schema.GroupKind]time.Time{}}
	for _, g := range groups {
		m.groups[g] = true
	}
	return m
}

// RESTMapping is the delegate's, or a no-match error for a kind remembered absent.
func (m *Mapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if m.knownAbsent(gk) {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	m.observe(gk, err)
	return mapping, err
}

// RESTMappings is the delegate's, or a no-match error for a kind remembered absent.
func (m *Mapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	if m.knownAbsent(gk) {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	mappings, err := m.RESTMapper.RESTMappings(gk, versions...)
	m.observe(gk, err)
	return mappings, err
}

func (m *Mapper) knownAbsent(gk schema.GroupKind) bool {
	if !m.groups[gk.Group] {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.absent[gk]
	if !ok {
		return false
	}
	if age := m.now().Sub(at); age < 0 || age >= TTL {
		delete(m.absent, gk)
		return false
	}
	return true
}

// observe remembers a no-match answer for a kind of the groups; any other
// answer (a mapping, or an error that is not "no match") forgets it.
func (m *Mapper) observe(gk schema.GroupKind, err error) {
	if !m.groups[gk.Group] {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if meta.IsNoMatchError(err) {
		m.absent[gk] = m.now()
		return
	}
	delete(m.absent, gk)
}
