package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSequenceHealthyRollout(t *testing.T) {
	seen := map[Phase]bool{}
	forgetOnce := func(d Decision) *State { // an operator that lost its status once per phase
		if !seen[d.Phase] {
			seen[d.Phase] = true
			return nil
		}
		return keepState(d)
	}
	for name, keep := range map[string]func(Decision) *State{
		"state kept": keepState, "state read back from status": viaStatus, "state lost once per phase": forgetOnce,
	} {
		t.Run(name, func(t *testing.T) {
			s := newSim(20)
			p := DefaultPolicy()
			var canaryReady, widenedAt time.Time
			log := s.run(t, p, 300, keep, func(d Decision) {
				updated := s.count(newTgt)
				if (d.Phase == PhaseStarted || d.Phase == PhaseCanary) && updated > p.CanarySize {
					t.Fatalf("%s: %d pods updated in phase %s", s.now.Sub(t0), updated, d.Phase)
				}
				if len(d.DeletePods) > p.CanarySize {
					t.Fatalf("%s: deleting %v", s.now.Sub(t0), d.DeletePods)
				}
				if d.Phase == PhaseCanary && d.State.BakedSince.After(canaryReady) {
					canaryReady = d.State.BakedSince
				}
				if d.Phase == PhaseIncreasing && widenedAt.IsZero() {
					widenedAt = s.now
					if updated != p.CanarySize {
						t.Fatalf("widened with %d updated pods", updated)
					}
				}
			})
			wantPhases := []Phase{PhaseStarted, PhaseCanary, PhaseIncreasing, PhaseWaiting, PhaseSuccessful}
			if !slices.Equal(log.phases, wantPhases) {
				t.Errorf("phases %v, want %v", log.phases, wantPhases)
			}
			wantStrategies := []string{"maxUnavailable 1", "OnDelete", "maxUnavailable 10%", "maxUnavailable 1"}
			if !slices.Equal(log.strategies, wantStrategies) {
				t.Errorf("strategies %v, want %v", log.strategies, wantStrategies)
			}
			if len(log.events) != len(wantPhases) && name != "state lost once per phase" { // lost state re-announces
				t.Errorf("events %v: one per phase change wanted", log.events)
			}
			if got := s.count(newTgt); got != 20 || log.last.Status.ReadyPods != 20 || s.recorded != s.ds.Generation {
				t.Errorf("end: %d updated, status %+v, recorded %d of generation %d", got, log.last.Status, s.recorded, s.ds.Generation)
			}
			if widenedAt.Sub(canaryReady) < p.BakeTime || widenedAt.Sub(canaryReady) > p.BakeTime+time.Second {
				t.Errorf("canary ready at %s, widened at %s: want the bake time and no more", canaryReady.Sub(t0), widenedAt.Sub(t0))
			}
			if total := s.now.Sub(t0); total > 40*time.Second {
				t.Errorf("rollout took %s", total)
			}
		})
	}
}

func TestSequenceCrashLoopingCanary(t *testing.T) {
	s := newSim(20)
	s.bad, s.crashAfter = newTgt, 2*time.Second
	p := DefaultPolicy()
	failedSeen := 0
	log := s.run(t, p, 60, keepState, func(d Decision) {
		if d.Phase != PhaseFailed && s.count(newTgt) > p.CanarySize {
			t.Fatalf("%s: %d pods on the bad version in phase %s", s.now.Sub(t0), s.count(newTgt), d.Phase)
		}
		if d.Phase == PhaseIncreasing || d.Phase == PhaseWaiting {
			t.Fatalf("%s: widened with a crashing canary", s.now.Sub(t0))
		}
		if d.Phase == PhaseFailed {
			failedSeen++
			if !d.Rollback || d.Degraded == "" {
				t.Fatalf("failed without rollback or Degraded: %+v", d)
			}
		}
	})
	if failedSeen == 0 || log.last.Phase != PhaseFailed {
		t.Fatalf("phases %v: want Failed", log.phases)
	}
	if len(s.everNew) != 1 || !s.everNew["node-00"] {
		t.Errorf("nodes that ran the bad version: %v, want only the canary node-00", s.everNew)
	}
	if s.count(oldTgt) != 20 || s.tmpl != oldTgt {
		t.Errorf("not rolled back: %d old pods, template %v", s.count(oldTgt), s.tmpl)
	}
	var warnings []Event
	for _, e := range log.events {
		if e.Type == EventTypeWarning {
			warnings = append(warnings, e)
		}
	}
	if len(warnings) != 1 || warnings[0].Reason != ReasonFailedUpdate ||
		!strings.Contains(warnings[0].Message, "node node-00") || !strings.Contains(warnings[0].Message, "pod virt-handler-") {
		t.Errorf("warnings %v: want one FailedUpdate naming the node and pod", warnings)
	}
	if got := StrategyString(s.ds.Spec.UpdateStrategy); got != "maxUnavailable 1" {
		t.Errorf("strategy left at %s", got)
	}
}
