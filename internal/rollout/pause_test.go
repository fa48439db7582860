package rollout

import (
	"testing"
	"time"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// A pause during the fast step updates no further pods (those being replaced
// finish), no deadline fires however long it lasts, and the resume completes.
// A pause before the canary started deletes no pod.
func TestPauseHoldsAndResumeCompletes(t *testing.T) {
	p := DefaultPolicy()
	p.BakeTime, p.PhaseDeadline = 3*time.Second, 20*time.Second
	s := newSim(40)
	var prev *State
	step := func(paused bool) Decision {
		t.Helper()
		specChanged := !metadata.DaemonSetIsUpToDate(s.ds, newTgt)
		d, err := Plan(Observation{DaemonSet: s.ds.DeepCopy(), Pods: s.podList(), Target: newTgt, Previous: prev,
			SpecChanged: specChanged, GenerationUnknown: s.ds.Generation != s.recorded, Paused: paused, Now: s.now}, p)
		if err != nil {
			t.Fatal(err)
		}
		s.apply(d, specChanged, newTgt)
		st := d.State
		prev = &st
		s.tick()
		return d
	}

	for range 5 { // paused from the start: the template goes in, no canary pod goes
		if d := step(true); len(d.DeletePods) > 0 {
			t.Fatalf("a paused rollout deleted %v", d.DeletePods)
		}
	}
	if n := s.count(newTgt); n != 0 {
		t.Fatalf("%d pods updated while paused before the canary", n)
	}
	var d Decision
	for range 200 {
		if d = step(false); d.Phase == PhaseWaiting && s.count(newTgt) >= 10 {
			break
		}
	}
	if d.Phase != PhaseWaiting {
		t.Fatalf("never reached the fast step: %s", d.Phase)
	}
	d = step(true)
	if got := StrategyString(*d.UpdateStrategy); got != "OnDelete" || !d.State.Paused || !d.Status.Paused {
		t.Fatalf("pausing the fast step: strategy %s, paused %v/%v", got, d.State.Paused, d.Status.Paused)
	}
	for range 3 { // the pods being replaced finish
		step(true)
	}
	held := s.count(newTgt)
	for range 60 { // three times the deadline
		if d = step(true); d.Degraded != "" {
			t.Fatalf("a paused rollout went Degraded: %s", d.Degraded)
		}
	}
	if n := s.count(newTgt); n != held {
		t.Fatalf("%d more pods updated while paused", n-held)
	}
	t.Logf("paused at %d of 40: %s", held, d.Status.Message)
	for range 200 {
		if d = step(false); d.Done && d.Phase == PhaseSuccessful {
			break
		}
		if d.Degraded != "" {
			t.Fatalf("the resumed rollout went Degraded: %s", d.Degraded)
		}
	}
	if d.Phase != PhaseSuccessful || s.count(newTgt) != 40 || d.Status.Paused {
		t.Fatalf("after the resume: %s, %d of 40 updated, paused %v", d.Phase, s.count(newTgt), d.Status.Paused)
	}
}

// A baked canary does not widen while paused.
func TestPausedCanaryDoesNotWiden(t *testing.T) {
	p := DefaultPolicy()
	p.BakeTime = 2 * time.Second
	s := newSim(10)
	var prev *State
	var d Decision
	for i := range 40 {
		specChanged := !metadata.DaemonSetIsUpToDate(s.ds, newTgt)
		var err error
		d, err = Plan(Observation{DaemonSet: s.ds.DeepCopy(), Pods: s.podList(), Target: newTgt, Previous: prev,
			SpecChanged: specChanged, Paused: i >= 3, Now: s.now}, p)
		if err != nil {
			t.Fatal(err)
		}
		s.apply(d, specChanged, newTgt)
		st := d.State
		prev = &st
		s.tick()
	}
	if d.Phase != PhaseCanary || s.count(newTgt) != 1 {
		t.Fatalf("paused canary: phase %s, %d updated: %s", d.Phase, s.count(newTgt), d.Status.Message)
	}
}
