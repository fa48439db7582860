package absentkinds

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper serves what served holds and counts the questions.
type countingMapper struct {
	meta.RESTMapper
	served map[schema.GroupKind]bool
	err    error
	asked  int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.asked++
	switch {
	case c.err != nil:
		return nil, c.err
	case c.served[gk]:
		return &meta.RESTMapping{GroupVersionKind: gk.WithVersion("v1")}, nil
	}
	return nil, &meta.NoKindMatchError{GroupKind: gk}
}

func (c *countingMapper) RESTMappings(gk schema.GroupKind, versions ...string) ([]*meta.RESTMapping, error) {
	m, err := c.RESTMapping(gk, versions...)
	if err != nil {
		return nil, err
	}
	return []*meta.RESTMapping{m}, nil
}

func TestMapperRemembersAbsentKindsOfItsGroups(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	scc := schema.GroupKind{Group: "security.openshift.io", Kind: "SecurityContextConstraints"}
	instancetype := schema.GroupKind{Group: "instancetype.kubevirt.io", Kind: "VirtualMachineClusterInstancetype"}
	d := &countingMapper{served: map[schema.GroupKind]bool{}}
	m := New(d, OpenShiftGroups, func() time.Time { return now })
	ask := func(gk schema.GroupKind) error {
		_, err := m.RESTMapping(gk, "v1")
		return err
	}

	for range 3 {
		if err := ask(scc); !meta.IsNoMatchError(err) {
			t.Fatalf("SCC: %v, want no match", err)
		}
	}
	if d.asked != 1 {
		t.Errorf("the delegate was asked %d times for an absent SCC, want 1", d.asked)
	}
	if _, err := m.RESTMappings(scc); !meta.IsNoMatchError(err) || d.asked != 1 {
		t.Errorf("RESTMappings: %v after %d questions", err, d.asked)
	}

	// A group outside the list is asked every time: its kinds are this
	// operator's own CRDs, served from the pass after it creates them.
	d.asked = 0
	_ = ask(instancetype)
	_ = ask(instancetype)
	if d.asked != 2 {
		t.Errorf("a group outside the list was asked %d times, want 2", d.asked)
	}

	// The TTL: an absence is believed for TTL, then asked again; a kind
	// that appeared meanwhile is then served.
	d.served[scc], d.asked = true, 0
	now = now.Add(TTL - time.Second)
	if err := ask(scc); !meta.IsNoMatchError(err) || d.asked != 0 {
		t.Errorf("within the TTL: %v after %d questions", err, d.asked)
	}
	now = now.Add(time.Second)
	if err := ask(scc); err != nil || d.asked != 1 {
		t.Errorf("after the TTL: %v after %d questions", err, d.asked)
	}

	// Another error is not an absence: it is passed on and not remembered.
	d.served[scc] = false
	d.err, d.asked = errors.New("connection refused"), 0
	if err := ask(scc); err == nil || meta.IsNoMatchError(err) {
		t.Errorf("a failed discovery: %v", err)
	}
	d.err = nil
	_ = ask(scc)
	if d.asked != 2 {
		t.Errorf("a failed discovery was remembered as an absence (%d questions)", d.asked)
	}
}
