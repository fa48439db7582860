package rollout

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	apiv1 "github.com/virt-operator/virt-operator/api/v1"
)

// mig is a migration from → to that started at start.
func mig(name, from, to string, start time.Time) Migration {
	return Migration{Namespace: "default", Name: name, SourceNode: from, TargetNode: to, StartedAt: start}
}

func TestHoldsOf(t *testing.T) {
	wait := 10 * time.Minute
	now := at(0)
	h := holdsOf([]Migration{
		mig("young", "a", "b", now.Add(-time.Minute)),
		mig("old", "b", "c", now.Add(-11*time.Minute)),   // b is held by young all the same
		mig("longer", "a", "", now.Add(-30*time.Second)), // a waits for the one that lasts longest
		mig("same", "d", "d", now.Add(-time.Minute)),     // one node, once
		mig("stuck", "e", "f", now.Add(-time.Hour)),
	}, wait, now)
	held := func(node string) string { return h.held[node].Migration }
	if held("a") != "default/longer" || held("b") != "default/young" || held("d") != "default/same" || len(h.held) != 3 {
		t.Errorf("held %v", h.held)
	}
	if !h.held["a"].Until.Equal(now.Add(wait - 30*time.Second)) {
		t.Errorf("a waits until %s", h.held["a"].Until)
	}
	if len(h.expired) != 3 || h.expired["c"].Migration != "default/old" || h.expired["e"].Migration != "default/stuck" || h.expired["f"].Node != "f" {
		t.Errorf("expired %v", h.expired)
	}
	if h := holdsOf([]Migration{mig("m", "a", "b", now)}, 0, now); len(h.held) != 0 || len(h.expired) != 2 {
		t.Errorf("maxMigrationWait 0 holds %v", h.held)
	}
}

// The canary and the widened rollout around nodes with migrations, one
// decision at a time.
func TestPlanWithMigrations(t *testing.T) {
	now := at(100)
	three := func(s *appsv1.DaemonSetUpdateStrategy, ps []corev1.Pod) Observation {
		return Observation{DaemonSet: daemonSet(newTgt, s, 3), Pods: ps, Target: newTgt, Now: now}
	}
	young := func(from, to string) []Migration { return []Migration{mig("m1", from, to, now.Add(-time.Minute))} }
	stuck := func(from, to string) []Migration { return []Migration{mig("m1", from, to, now.Add(-time.Hour))} }
	cases := []struct {
		name     string
		obs      Observation
		prev     *State
		p        func(*Policy)
		migs     []Migration
		phase    Phase
		strategy string
		del      []string
		waits    []string // node=migration
		exp      []string // nodes replaced past the wait
		noDead   bool     // the deadline does not run: only migrations hold the phase
	}{
		{name: "the canary is picked off nodes with a migration", obs: three(OnDelete(), pods(oldTgt, 0, 3)), prev: state(PhaseStarted, now),
			migs: young("node-0", "node-1"), phase: PhaseCanary, strategy: "OnDelete", del: []string{"virt-handler-old-node-2"}},
		{name: "a pending migration with only a source", obs: three(OnDelete(), pods(oldTgt, 0, 3)), prev: state(PhaseStarted, now),
			migs: young("node-0", ""), phase: PhaseCanary, strategy: "OnDelete", del: []string{"virt-handler-old-node-1"}},
		{name: "every node busy: the canary waits on the first, deleting nothing", obs: three(OnDelete(), pods(oldTgt, 0, 3)), prev: state(PhaseStarted, now),
			migs: append(young("node-0", "node-1"), mig("m2", "node-2", "node-1", now.Add(-2*time.Minute))), phase: PhaseCanary, strategy: "OnDelete",
			waits: []string{"node-0=default/m1"}, noDead: true},
		{name: "a pinned canary node that got a migration keeps its pod", obs: three(OnDelete(), pods(oldTgt, 0, 3)), prev: state(PhaseCanary, now, "node-0"),
			migs: young("node-2", "node-0"), phase: PhaseCanary, strategy: "OnDelete", waits: []string{"node-0=default/m1"}, noDead: true},
		{name: "past maxMigrationWait the canary's pod goes, named", obs: three(OnDelete(), pods(oldTgt, 0, 3)), prev: state(PhaseCanary, now, "node-0"),
			migs: stuck("node-2", "node-0"), phase: PhaseCanary, strategy: "OnDelete", del: []string{"virt-handler-old-node-0"}, exp: []string{"node-0"}},
		{name: "maxMigrationWait 0 waits for nothing", obs: three(OnDelete(), pods(oldTgt, 0, 3)), prev: state(PhaseCanary, now, "node-0"),
			p: func(p *Policy) { p.MaxMigrationWait = 0 }, migs: young("node-0", "node-1"), phase: PhaseCanary, strategy: "OnDelete",
			del: []string{"virt-handler-old-node-0"}, exp: []string{"node-0"}},
		{name: "a baked canary widens to OnDelete batches while a busy node's pod is old", obs: three(OnDelete(), with(pods(oldTgt, 1, 3), pod("node-0", newTgt, at(0)))),
			prev: state(PhaseCanary, now, "node-0"), migs: young("node-1", "node-0"), phase: PhaseWaiting, strategy: "OnDelete",
			del: []string{"virt-handler-old-node-2"}, waits: []string{"node-1=default/m1"}},
		{name: "a migration on updated nodes only: RollingUpdate", obs: three(fast(), with(pods(newTgt, 0, 2), pod("node-2", oldTgt, t0))),
			prev: state(PhaseWaiting, now, "node-0"), migs: young("node-0", "node-1"), phase: PhaseWaiting, strategy: "maxUnavailable 10%"},
		{name: "switching from RollingUpdate: nothing deleted until the DaemonSet is OnDelete", obs: three(fast(), with(pods(newTgt, 0, 1), pods(oldTgt, 1, 3)...)),
			prev: state(PhaseWaiting, now, "node-0"), migs: young("node-1", "node-0"), phase: PhaseWaiting, strategy: "OnDelete", waits: []string{"node-1=default/m1"}},
		{name: "only the busy node is left: waiting, no deadline", obs: three(OnDelete(), with(pods(newTgt, 0, 2), pod("node-2", oldTgt, t0))),
			prev: state(PhaseWaiting, now.Add(-time.Hour), "node-0"), migs: young("node-2", "node-0"), phase: PhaseWaiting, strategy: "OnDelete",
			waits: []string{"node-2=default/m1"}, noDead: true},
		{name: "only the busy node is left, past the wait: replaced and named", obs: three(OnDelete(), with(pods(newTgt, 0, 2), pod("node-2", oldTgt, t0))),
			prev: state(PhaseWaiting, now, "node-0"), migs: stuck("node-2", "node-0"), phase: PhaseWaiting, strategy: "OnDelete",
			del: []string{"virt-handler-old-node-2"}, exp: []string{"node-2"}},
		{name: "the migration ended: back to RollingUpdate", obs: three(OnDelete(), with(pods(newTgt, 0, 2), pod("node-2", oldTgt, t0))),
			prev: state(PhaseWaiting, now, "node-0"), phase: PhaseWaiting, strategy: "maxUnavailable 10%"},
		{name: "paused: nothing deleted", obs: func() Observation {
			o := three(OnDelete(), with(pods(newTgt, 0, 1), pods(oldTgt, 1, 3)...))
			o.Paused = true
			return o
		}(), prev: state(PhaseWaiting, now, "node-0"), migs: young("node-1", ""), phase: PhaseWaiting, strategy: "OnDelete", waits: []string{"node-1=default/m1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultPolicy()
			if tc.p != nil {
				tc.p(&p)
			}
			obs := tc.obs
			obs.Previous, obs.Migrations = tc.prev, tc.migs
			d, err := Plan(obs, p)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if d.UpdateStrategy != nil {
				got = StrategyString(*d.UpdateStrategy)
			}
			if d.Phase != tc.phase || got != tc.strategy || !slices.Equal(d.DeletePods, tc.del) {
				t.Errorf("phase %s strategy %s deletes %v; want %s %s %v (%s)", d.Phase, got, d.DeletePods, tc.phase, tc.strategy, tc.del, d.State.Message)
			}
			var waits, exp []string
			for _, w := range d.State.Waits {
				waits = append(waits, w.Node+"="+w.Migration)
			}
			for _, w := range d.Expired {
				exp = append(exp, w.Node)
			}
			if !slices.Equal(waits, tc.waits) || !slices.Equal(exp, tc.exp) {
				t.Errorf("waits %v expired %v; want %v %v", waits, exp, tc.waits, tc.exp)
			}
			if int(d.Status.NodesWaitingForMigrations) != len(tc.waits) || len(d.Status.MigrationWaits) != len(tc.waits) {
				t.Errorf("status waits %+v, %d", d.Status.MigrationWaits, d.Status.NodesWaitingForMigrations)
			}
			for _, w := range d.State.Waits {
				if !strings.Contains(d.State.Message, w.Node+" ("+w.Migration) && !strings.Contains(d.State.Message, "migration "+w.Migration) {
					t.Errorf("message %q does not name %s and %s", d.State.Message, w.Node, w.Migration)
				}
				if left := w.Until.Sub(now); d.RequeueAfter <= 0 || d.RequeueAfter > left {
					t.Errorf("requeue %s, the wait ends in %s", d.RequeueAfter, left)
				}
			}
			if tc.noDead {
				later := obs
				later.Now = now.Add(9 * time.Minute) // beyond the deadline from the stored progress, within the wait
				st := d.State
				later.Previous = &st
				later.Previous.ProgressAt = now.Add(-time.Hour)
				if d2, _ := Plan(later, p); d2.Degraded != "" {
					t.Errorf("a rollout held by migrations only went Degraded: %s", d2.Degraded)
				}
			}
		})
	}
}

// A wait that begins or ends is progress, so the deadline counts from it.
func TestMigrationWaitIsProgress(t *testing.T) {
	now := at(1000)
	obs := Observation{DaemonSet: daemonSet(newTgt, OnDelete(), 3), Pods: with(pods(newTgt, 0, 2), pod("node-2", oldTgt, t0)), Target: newTgt, Now: now,
		Previous: state(PhaseWaiting, now.Add(-20*time.Minute), "node-0")}
	obs.Previous.ProgressAt = now.Add(-9 * time.Minute)
	obs.Migrations = []Migration{mig("m", "node-2", "", now.Add(-time.Minute))}
	d, err := Plan(obs, DefaultPolicy())
	if err != nil || !d.State.ProgressAt.Equal(now) {
		t.Fatalf("a wait beginning: progress at %s (%v)", d.State.ProgressAt, err)
	}
	st := d.State
	obs.Previous, obs.Migrations, obs.Now = &st, nil, now.Add(time.Minute)
	if d, _ = Plan(obs, DefaultPolicy()); !d.State.ProgressAt.Equal(obs.Now) || d.State.WaitingNodes != 0 || d.Degraded != "" {
		t.Fatalf("a wait ending: progress at %s, waits %d, degraded %q", d.State.ProgressAt, d.State.WaitingNodes, d.Degraded)
	}
}

// The status keeps the first MaxListedWaits waits and the count, and the
// state read back from it compares equal (no progress).
func TestMigrationWaitsInStatus(t *testing.T) {
	now := at(100)
	var ps []corev1.Pod
	var migs []Migration
	for i := range 10 {
		node := fmt.Sprintf("node-%02d", i)
		if i == 0 {
			ps = append(ps, pod(node, newTgt, t0))
			continue
		}
		ps = append(ps, pod(node, oldTgt, t0))
		migs = append(migs, mig(fmt.Sprintf("m%d", i), node, "", now.Add(-time.Minute)))
	}
	obs := Observation{DaemonSet: daemonSet(newTgt, OnDelete(), 10), Pods: ps, Target: newTgt, Now: now, Migrations: migs,
		Previous: state(PhaseWaiting, now, "node-00")}
	d, err := Plan(obs, DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.NodesWaitingForMigrations != 9 || len(d.Status.MigrationWaits) != MaxListedWaits || d.Status.MigrationWaits[0].Node != "node-01" {
		t.Fatalf("status %d waits, listed %+v", d.Status.NodesWaitingForMigrations, d.Status.MigrationWaits)
	}
	if !strings.Contains(d.Status.Message, "9 nodes wait for migrations: node-01 (default/m1, until ") || !strings.Contains(d.Status.Message, "and 4 more") {
		t.Errorf("message %q", d.Status.Message)
	}
	back := StateFromStatus(d.Status, newTgt.ID)
	if !sameWaits(*back, d.State) || back.WaitingNodes != 9 {
		t.Errorf("read back %+v", back.Waits)
	}
	obs.Previous, obs.Now = back, now.Add(time.Second)
	if d2, _ := Plan(obs, DefaultPolicy()); !d2.State.ProgressAt.Equal(back.ProgressAt) {
		t.Errorf("the same waits read back counted as progress")
	}
}

// A succeeded rollout's clean-up (the carried-over settings dropped, every pod
// replaced once more) waits while migrations hold nodes, under OnDelete.
func TestCleanupWaitsForMigrations(t *testing.T) {
	now := at(100)
	p := DefaultPolicy()
	carrying := daemonSet(newTgt, Default(), 3)
	carrying.Annotations[CarriedOverAnnotation] = CarriedTLSArgs
	migs := []Migration{mig("m", "node-1", "node-2", now.Add(-time.Minute))}
	obs := Observation{DaemonSet: carrying, Pods: pods(newTgt, 0, 3), Target: newTgt, Now: now, Migrations: migs,
		Previous: &State{Phase: PhaseSuccessful, TargetID: newTgt.ID, StartedAt: t0, PhaseChangeAt: t0, ProgressAt: t0,
			CanaryNodes: []string{"node-0"}, CanaryPods: []string{"virt-handler-0"}}}
	if !NeedsMigrations(obs, p) {
		t.Fatal("a DaemonSet with settings to drop needs the migrations")
	}
	d, err := Plan(obs, p)
	if err != nil || d.Phase != PhaseSuccessful || !d.CleanupHeld || d.State.WaitingNodes != 2 || d.Event != nil {
		t.Fatalf("held clean-up: %+v (%v)", d, err)
	}
	tmpl := TemplateWrite{DropCarried: true}
	if s := CleanupStrategy(d.Phase, tmpl, carrying, p, d.CleanupHeld); s == nil || s.Type != appsv1.OnDeleteDaemonSetStrategyType {
		t.Fatalf("clean-up strategy %v, want OnDelete", s)
	}
	// Written clean under OnDelete, the DaemonSet has a template to roll out:
	// still held, and resumed at the fast step once the migration is over.
	clean := daemonSet(newTgt, OnDelete(), 3)
	clean.Status.UpdatedNumberScheduled = 0
	st := d.State
	obs.DaemonSet, obs.Previous = clean, &st
	d, _ = Plan(obs, p)
	if d.Phase != PhaseSuccessful || !d.CleanupHeld || d.Event != nil {
		t.Fatalf("held clean-up, written: %s held %v (%s)", d.Phase, d.CleanupHeld, d.State.Message)
	}
	if s := CleanupStrategy(d.Phase, TemplateWrite{}, clean, p, d.CleanupHeld); s == nil || s.Type != appsv1.OnDeleteDaemonSetStrategyType {
		t.Fatalf("clean-up strategy %v, want OnDelete", s)
	}
	st = d.State
	obs.Previous, obs.Migrations = &st, nil
	d, _ = Plan(obs, p)
	if d.CleanupHeld || d.State.WaitingNodes != 0 {
		t.Fatalf("migration over: held %v, waits %d", d.CleanupHeld, d.State.WaitingNodes)
	}
	if s := CleanupStrategy(d.Phase, TemplateWrite{}, clean, p, d.CleanupHeld); s == nil || StrategyString(*s) != "maxUnavailable 10%" {
		t.Fatalf("clean-up strategy %v, want the fast step", s)
	}
	// Through every re-check the record stays the rollout that completed.
	if d.Status.CanaryNode != "node-0" || d.Status.CanaryPod != "virt-handler-0" || !d.State.StartedAt.Equal(t0) {
		t.Fatalf("after the clean-up's re-checks: canary %q/%q, started %s", d.Status.CanaryNode, d.Status.CanaryPod, d.State.StartedAt)
	}
	// Pods being replaced meanwhile (a re-check in Waiting) are held too.
	rolling := daemonSet(newTgt, fast(), 3)
	rolling.Status.UpdatedNumberScheduled = 1
	obs = Observation{DaemonSet: rolling, Pods: with(pods(newTgt, 0, 2), pod("node-2", newTgt, t0, notReady)), Target: newTgt, Now: now,
		Migrations: migs, Previous: state(PhaseWaiting, now, "node-0")}
	if d, _ = Plan(obs, p); d.Phase != PhaseWaiting || StrategyString(*d.UpdateStrategy) != "OnDelete" || len(d.DeletePods) > 0 || d.State.WaitingNodes != 2 {
		t.Fatalf("re-check under migrations: %s %s %v waits %d", d.Phase, StrategyString(*d.UpdateStrategy), d.DeletePods, d.State.WaitingNodes)
	}
}

func TestNeedsMigrations(t *testing.T) {
	rest := Observation{DaemonSet: daemonSet(newTgt, Default(), 3), Previous: &State{Phase: PhaseSuccessful, TargetID: newTgt.ID}}
	if NeedsMigrations(rest, DefaultPolicy()) {
		t.Error("a rollout at rest lists migrations")
	}
	for name, mut := range map[string]func(*Observation){
		"spec changed":       func(o *Observation) { o.SpecChanged = true },
		"active":             func(o *Observation) { o.Previous = state(PhaseWaiting, t0) },
		"widened":            func(o *Observation) { o.DaemonSet = daemonSet(newTgt, fast(), 3) },
		"generation unknown": func(o *Observation) { o.GenerationUnknown = true },
		"waits in status":    func(o *Observation) { o.Previous = &State{Phase: PhaseSuccessful, WaitingNodes: 1} },
	} {
		o := rest
		mut(&o)
		if !NeedsMigrations(o, DefaultPolicy()) {
			t.Errorf("%s: no migrations listed", name)
		}
	}
}

func TestMaxMigrationWaitPolicy(t *testing.T) {
	if p, err := PolicyFrom(&apiv1.HandlerRolloutPolicy{MaxMigrationWait: &apiv1.Duration{Duration: time.Minute}}); err != nil || p.MaxMigrationWait != time.Minute {
		t.Fatalf("%+v, %v", p, err)
	}
	if p, _ := PolicyFrom(nil); p.MaxMigrationWait != DefaultMaxMigrationWait {
		t.Fatalf("default %s", p.MaxMigrationWait)
	}
	if _, err := PolicyFrom(&apiv1.HandlerRolloutPolicy{MaxMigrationWait: &apiv1.Duration{Invalid: `"1w"`}}); err == nil ||
		!strings.Contains(err.Error(), `spec.handlerRollout: maxMigrationWait: "1w" is not a Go duration`) {
		t.Fatalf("an invalid stored value gave %v", err)
	}
	p := DefaultPolicy()
	p.MaxMigrationWait = -time.Second
	if err := p.Validate(); err == nil || !strings.HasPrefix(err.Error(), "maxMigrationWait:") {
		t.Fatalf("negative: %v", err)
	}
}

// The batch under OnDelete takes what the DaemonSet controller would at the
// fast step: not-Ready old pods freely, Ready ones while fewer than the fast
// step are unavailable.
func TestBatchHonoursTheFastStep(t *testing.T) {
	now := at(100)
	var ps []corev1.Pod
	for i := range 20 {
		ps = append(ps, pod(fmt.Sprintf("node-%02d", i), oldTgt, t0))
	}
	ps[0] = pod("node-00", newTgt, t0)                       // the canary
	ps[5] = pod("node-05", oldTgt, t0, notReady)             // an old pod that is not Ready: unavailable already
	ps[7] = pod("node-07", newTgt, t0, notReady)             // a new one starting: unavailable
	migs := []Migration{mig("m", "node-01", "node-02", now)} // held
	obs := Observation{DaemonSet: daemonSet(newTgt, OnDelete(), 20), Pods: ps, Target: newTgt, Now: now, Migrations: migs,
		Previous: state(PhaseWaiting, now, "node-00")}
	p := DefaultPolicy()
	p.FastStep = intstr.FromString("15%") // 3 of 20
	d, err := Plan(obs, p)
	if err != nil {
		t.Fatal(err)
	}
	// Unavailable: node-05 and node-07, so one Ready pod more; node-05's goes as well.
	want := []string{"virt-handler-old-node-03", "virt-handler-old-node-05"}
	if !slices.Equal(d.DeletePods, want) {
		t.Fatalf("batch %v, want %v", d.DeletePods, want)
	}
}
