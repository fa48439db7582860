package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/virt-operator/virt-operator/internal/metadata"
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

// Migrations come and go during a rollout on 20 nodes: one on the node that
// would be the canary, one starting mid-rollout, a pending one with no target
// yet, and one that never finishes. At every step: no pod of a node a
// migration holds is deleted, by the rollout or by the DaemonSet controller;
// the canary is one pod; the operator's own batches stay within the fast step;
// nothing is Degraded. The stuck migration's nodes are replaced once its wait
// is over, each named once; the rollout ends Successful on every node.
func TestSequenceMigrationsHoldTheirNodes(t *testing.T) {
	for name, keep := range map[string]func(Decision) *State{"state kept": keepState, "state read back from status": viaStatus} {
		t.Run(name, func(t *testing.T) {
			s := newSim(20)
			p := DefaultPolicy()
			p.MaxMigrationWait = 90 * time.Second
			s.migrations = []simMigration{
				{mig("on-the-canary", "node-00", "node-05", t0.Add(-5*time.Second)), t0.Add(40 * time.Second)},
				{mig("mid-rollout", "node-10", "node-11", t0.Add(15*time.Second)), t0.Add(60 * time.Second)},
				{mig("pending", "node-18", "", t0.Add(20*time.Second)), t0.Add(25 * time.Second)},
				{mig("stuck", "node-15", "node-16", t0.Add(10*time.Second)), time.Time{}},
			}
			held := func(node string, at time.Time) string {
				for _, m := range s.migrations {
					running := !at.Before(m.StartedAt) && (m.end.IsZero() || at.Before(m.end))
					if running && at.Before(m.StartedAt.Add(p.MaxMigrationWait)) && (m.SourceNode == node || m.TargetNode == node) {
						return m.Name
					}
				}
				return ""
			}
			checked := 0
			expired := map[string]int{}
			var sawBatch bool
			log := s.run(t, p, 400, keep, func(d Decision) {
				for _, del := range s.deletions[checked:] {
					if m := held(del.node, del.at); m != "" {
						t.Fatalf("%s: the pod on %s was deleted while migration %s held it", del.at.Sub(t0), del.node, m)
					}
				}
				checked = len(s.deletions)
				if (d.Phase == PhaseStarted || d.Phase == PhaseCanary) && s.count(newTgt) > p.CanarySize {
					t.Fatalf("%s: %d pods updated in phase %s", s.now.Sub(t0), s.count(newTgt), d.Phase)
				}
				if d.Phase == PhaseCanary && len(d.State.CanaryNodes) > 0 && d.State.CanaryNodes[0] == "node-00" {
					t.Fatalf("%s: the canary was picked on node-00, which a migration holds", s.now.Sub(t0))
				}
				if d.Phase.widened() && s.ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
					sawBatch = sawBatch || len(d.DeletePods) > 0
					unavailable := 0
					for _, pd := range s.pods {
						if pd.DeletionTimestamp != nil || !metadata.PodIsReady(pd) {
							unavailable++
						}
					}
					if unavailable > 2 { // 10% of 20
						t.Fatalf("%s: %d pods unavailable under the operator's batches", s.now.Sub(t0), unavailable)
					}
				}
				if d.Degraded != "" {
					t.Fatalf("%s: Degraded: %s", s.now.Sub(t0), d.Degraded)
				}
				for _, w := range d.Expired {
					expired[w.Node]++
					if w.Migration != "default/stuck" || s.now.Before(t0.Add(100*time.Second)) {
						t.Fatalf("%s: %s replaced past the wait of %s", s.now.Sub(t0), w.Node, w.Migration)
					}
				}
			})
			if log.last.Phase != PhaseSuccessful || s.count(newTgt) != 20 {
				t.Fatalf("end: phase %s, %d of 20 updated (%s)", log.last.Phase, s.count(newTgt), log.last.State.Message)
			}
			// Widened while node-00's migration runs, the DaemonSet stays
			// OnDelete, which is the widened strategy then: Increasing is
			// passed through in the same decision.
			wantPhases := []Phase{PhaseStarted, PhaseCanary, PhaseWaiting, PhaseSuccessful}
			if !slices.Equal(log.phases, wantPhases) {
				t.Errorf("phases %v, want %v", log.phases, wantPhases)
			}
			if expired["node-15"] != 1 || expired["node-16"] != 1 || len(expired) != 2 {
				t.Errorf("named past the wait: %v, want node-15 and node-16 once each", expired)
			}
			if !sawBatch || !slices.Contains(log.strategies, "OnDelete") || log.strategies[len(log.strategies)-1] != "maxUnavailable 1" {
				t.Errorf("strategies %v (batches seen %v)", log.strategies, sawBatch)
			}
			if log.last.State.WaitingNodes != 0 || log.last.Status.NodesWaitingForMigrations != 0 {
				t.Errorf("a finished rollout still lists waits: %+v", log.last.Status.MigrationWaits)
			}
		})
	}
}
