package rollout

import (
	"fmt"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// sim is a DaemonSet controller and kubelet in one, ticking once a second: a pod
// is created on a free node, Running and Ready a tick later, and a terminating pod
// is gone a tick after its deletion. Under RollingUpdate it deletes old pods while
// fewer than maxUnavailable pods are unavailable; under OnDelete it replaces only
// deleted pods. Pods of the bad target restart crashAfter after turning Ready.
type sim struct {
	n          int
	now        time.Time
	ds         *appsv1.DaemonSet
	pods       map[string]*corev1.Pod // by node
	tmpl       metadata.Target
	bad        metadata.Target
	crashAfter time.Duration
	recorded   int64
	everNew    map[string]bool
	seq        int
	// migrations run from their StartedAt to end (zero: never ends);
	// deletions are every pod deletion, by whoever, in order.
	migrations []simMigration
	deletions  []simDeletion
}

type simMigration struct {
	Migration
	end time.Time
}

type simDeletion struct {
	node string
	at   time.Time
}

// unfinished are the migrations running now, as the controller lists them.
func (s *sim) unfinished() []Migration {
	var out []Migration
	for _, m := range s.migrations {
		if !s.now.Before(m.StartedAt) && (m.end.IsZero() || s.now.Before(m.end)) {
			out = append(out, m.Migration)
		}
	}
	return out
}

func newSim(n int) *sim {
	s := &sim{n: n, now: t0, ds: daemonSet(oldTgt, Default(), int32(n)), pods: map[string]*corev1.Pod{},
		tmpl: oldTgt, everNew: map[string]bool{}}
	s.recorded = s.ds.Generation
	for i := range n {
		p := pod(fmt.Sprintf("node-%02d", i), oldTgt, t0.Add(-time.Hour), createdAt(t0.Add(-time.Hour)))
		s.pods[p.Spec.NodeName] = &p
	}
	return s
}

func (s *sim) podList() []corev1.Pod {
	var out []corev1.Pod
	for _, node := range s.nodes() {
		out = append(out, *s.pods[node].DeepCopy())
	}
	return out
}

func (s *sim) nodes() []string {
	var ns []string
	for n := range s.pods {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

func (s *sim) count(t metadata.Target) (n int) {
	for _, p := range s.pods {
		if metadata.PodIsUpToDate(p, t) {
			n++
		}
	}
	return n
}

func (s *sim) setTemplate(t metadata.Target) {
	s.tmpl = t
	s.ds.Annotations, s.ds.Spec.Template.Annotations = marks(t), marks(t)
	s.ds.Generation++
}

func (s *sim) deletePod(name string) {
	for _, p := range s.pods {
		if p.Name == name && p.DeletionTimestamp == nil {
			ts := metav1.NewTime(s.now)
			p.DeletionTimestamp = &ts
			s.deletions = append(s.deletions, simDeletion{node: p.Spec.NodeName, at: s.now})
		}
	}
}

// apply does what the controller does with a Decision.
func (s *sim) apply(d Decision, specChanged bool, target metadata.Target) {
	switch {
	case d.Rollback && s.tmpl != oldTgt:
		s.setTemplate(oldTgt)
	case specChanged && !d.Rollback:
		s.setTemplate(target)
	}
	if d.UpdateStrategy != nil && !SameStrategy(s.ds.Spec.UpdateStrategy, *d.UpdateStrategy) {
		s.ds.Spec.UpdateStrategy = *d.UpdateStrategy
		s.ds.Generation++
	}
	for _, name := range d.DeletePods {
		s.deletePod(name)
	}
	if d.RecordGeneration {
		s.recorded = s.ds.Generation
	}
}

func (s *sim) tick() {
	s.now = s.now.Add(time.Second)
	for node, p := range s.pods {
		switch {
		case p.DeletionTimestamp != nil:
			delete(s.pods, node)
		case p.Status.Phase == corev1.PodPending:
			p.Status.Phase = corev1.PodRunning
			p.Status.ContainerStatuses[0].Ready = true
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(s.now)}}
		case s.crashAfter > 0 && metadata.PodIsUpToDate(p, s.bad) && metadata.PodIsReady(p) &&
			!s.now.Before(readySince(p).Add(s.crashAfter)):
			p.Status.ContainerStatuses[0].RestartCount++
			p.Status.ContainerStatuses[0].Ready = false
			p.Status.Conditions = nil
		}
	}
	for i := range s.n {
		node := fmt.Sprintf("node-%02d", i)
		if s.pods[node] == nil {
			s.seq++
			p := pod(node, s.tmpl, s.now, notReady, createdAt(s.now))
			p.Name = fmt.Sprintf("virt-handler-%d", s.seq)
			p.Status.Phase = corev1.PodPending
			s.pods[node] = &p
			if s.tmpl == newTgt {
				s.everNew[node] = true
			}
		}
	}
	if st := s.ds.Spec.UpdateStrategy; st.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		maxU, _ := intstr.GetScaledValueFromIntOrPercent(st.RollingUpdate.MaxUnavailable, s.n, true)
		unavailable := 0
		for _, p := range s.pods {
			if p.DeletionTimestamp != nil || !metadata.PodIsReady(p) {
				unavailable++
			}
		}
		for _, node := range s.nodes() {
			p := s.pods[node]
			if metadata.PodIsUpToDate(p, s.tmpl) || p.DeletionTimestamp != nil {
				continue
			}
			if unavailable < maxU || !metadata.PodIsReady(p) {
				if metadata.PodIsReady(p) {
					unavailable++
				}
				s.deletePod(p.Name)
			}
		}
	}
	s.ds.Status.ObservedGeneration = s.ds.Generation
}

type stepLog struct {
	phases     []Phase
	strategies []string
	events     []Event
	last       Decision
}

// keepState is the state an operator keeps: all of it.
func keepState(d Decision) *State { st := d.State; return &st }

// viaStatus is what an operator restarted after every step reads back.
func viaStatus(d Decision) *State { return StateFromStatus(d.Status, newTgt.ID) }

// run alternates Plan and the simulator until done or limit ticks; check runs
// after every decision; keep says what state the next Plan sees.
func (s *sim) run(t *testing.T, p Policy, limit int, keep func(Decision) *State, check func(Decision)) stepLog {
	t.Helper()
	var log stepLog
	var prev *State
	log.strategies = []string{StrategyString(s.ds.Spec.UpdateStrategy)}
	for range limit {
		specChanged := !metadata.DaemonSetIsUpToDate(s.ds, newTgt)
		d, err := Plan(Observation{DaemonSet: s.ds.DeepCopy(), Pods: s.podList(), Target: newTgt, Previous: prev,
			SpecChanged: specChanged, GenerationUnknown: s.ds.Generation != s.recorded, Migrations: s.unfinished(), Now: s.now}, p)
		if err != nil {
			t.Fatalf("%s: %v", s.now.Sub(t0), err)
		}
		if n := len(log.phases); n == 0 || log.phases[n-1] != d.Phase {
			log.phases = append(log.phases, d.Phase)
		}
		if d.Event != nil {
			log.events = append(log.events, *d.Event)
		}
		s.apply(d, specChanged, newTgt)
		if st := StrategyString(s.ds.Spec.UpdateStrategy); st != log.strategies[len(log.strategies)-1] {
			log.strategies = append(log.strategies, st)
		}
		check(d)
		log.last = d
		prev = keep(d)
		if d.Done && d.Phase == PhaseSuccessful {
			return log
		}
		s.tick()
	}
	return log
}
