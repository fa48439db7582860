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

type want struct {
	phase     Phase
	strategy  string // StrategyString of Decision.UpdateStrategy; "" for nil
	deletes   []string
	rollback  bool
	record    bool
	done      bool
	event     string // reason; "" for none
	degraded  string // substring; "" for none
	requeue   time.Duration
	err       bool
	canaryPod string
}

func TestPlanTransitions(t *testing.T) {
	oldDS := daemonSet(oldTgt, Default(), 2)
	newOnDelete := daemonSet(newTgt, OnDelete(), 2)
	unobserved := daemonSet(newTgt, OnDelete(), 2)
	unobserved.Generation = 4
	newDefault := daemonSet(newTgt, Default(), 2)
	oneNode := daemonSet(newTgt, OnDelete(), 1)
	canaryReadyAt := func(s int, o ...podOpt) []corev1.Pod {
		return with(pods(oldTgt, 1, 2), pod("node-0", newTgt, at(s), o...))
	}
	now := at(100)
	cases := []struct {
		name string
		obs  Observation
		p    func(*Policy)
		want want
	}{
		{"spec change starts the canary under OnDelete", Observation{DaemonSet: oldDS, Pods: pods(oldTgt, 0, 2), SpecChanged: true},
			nil, want{phase: PhaseStarted, strategy: "OnDelete", event: "HandlerRolloutStarted", requeue: 10 * time.Minute}},
		{"started waits for the DaemonSet to take the template", Observation{DaemonSet: oldDS, Pods: pods(oldTgt, 0, 2), Previous: state(PhaseStarted, now)},
			nil, want{phase: PhaseStarted, strategy: "OnDelete", requeue: 10 * time.Minute}},
		{"started waits until the controller observed the template", Observation{DaemonSet: unobserved, Pods: pods(oldTgt, 0, 2), Previous: state(PhaseStarted, now)},
			nil, want{phase: PhaseStarted, strategy: "OnDelete", requeue: 10 * time.Minute}},
		{"started waits while the live strategy is still RollingUpdate", Observation{DaemonSet: newDefault, Pods: pods(oldTgt, 0, 2), Previous: state(PhaseStarted, now)},
			nil, want{phase: PhaseStarted, strategy: "OnDelete", requeue: 10 * time.Minute}},
		{"canary deletes the old pod on the first node", Observation{DaemonSet: newOnDelete, Pods: pods(oldTgt, 0, 2), Previous: state(PhaseStarted, now)},
			nil, want{phase: PhaseCanary, strategy: "OnDelete", deletes: []string{"virt-handler-old-node-0"}, event: "HandlerRolloutCanary", requeue: 10 * time.Minute}},
		{"canary of two deletes two", Observation{DaemonSet: daemonSet(newTgt, OnDelete(), 3), Pods: pods(oldTgt, 0, 3), Previous: state(PhaseStarted, now)},
			func(p *Policy) { p.CanarySize = 2 }, want{phase: PhaseCanary, strategy: "OnDelete", deletes: []string{"virt-handler-old-node-0", "virt-handler-old-node-1"}, event: "HandlerRolloutCanary", requeue: 10 * time.Minute}},
		{"waits for the canary pod to be created", Observation{DaemonSet: newOnDelete, Pods: pods(oldTgt, 1, 2), Previous: state(PhaseCanary, now, "node-0")},
			nil, want{phase: PhaseCanary, strategy: "OnDelete", requeue: 10 * time.Minute}},
		{"does not delete a terminating canary twice", Observation{DaemonSet: newOnDelete, Pods: with(pods(oldTgt, 1, 2), pod("node-0", oldTgt, t0, terminating)), Previous: state(PhaseCanary, now, "node-0")},
			nil, want{phase: PhaseCanary, strategy: "OnDelete", requeue: 10 * time.Minute}},
		{"waits for the canary pod to be ready", Observation{DaemonSet: newOnDelete, Pods: canaryReadyAt(0, notReady), Previous: state(PhaseCanary, now, "node-0")},
			nil, want{phase: PhaseCanary, strategy: "OnDelete", requeue: 10 * time.Minute, canaryPod: "virt-handler-new-node-0"}},
		{"holds a ready canary while it bakes", Observation{DaemonSet: newOnDelete, Pods: canaryReadyAt(97), Previous: state(PhaseCanary, now, "node-0")},
			nil, want{phase: PhaseCanary, strategy: "OnDelete", requeue: 7 * time.Second, canaryPod: "virt-handler-new-node-0"}},
		{"widens to the fast step once baked", Observation{DaemonSet: newOnDelete, Pods: canaryReadyAt(90), Previous: state(PhaseCanary, now, "node-0")},
			nil, want{phase: PhaseIncreasing, strategy: "maxUnavailable 10%", event: "HandlerRolloutIncreasing", requeue: 10 * time.Minute, canaryPod: "virt-handler-new-node-0"}},
		{"a custom fast step", Observation{DaemonSet: newOnDelete, Pods: canaryReadyAt(90), Previous: state(PhaseCanary, now, "node-0")},
			func(p *Policy) { p.FastStep.StrVal = "25%" }, want{phase: PhaseIncreasing, strategy: "maxUnavailable 25%", event: "HandlerRolloutIncreasing", requeue: 10 * time.Minute, canaryPod: "virt-handler-new-node-0"}},
		{"a canary that restarted fails and rolls back", Observation{DaemonSet: newOnDelete, Pods: canaryReadyAt(98, restarted(1)), Previous: state(PhaseCanary, now, "node-0")},
			nil, want{phase: PhaseFailed, strategy: "maxUnavailable 1", rollback: true, event: ReasonFailedUpdate, degraded: "pod virt-handler-new-node-0 on node node-0"}},
		{"a restart while not ready is a crash too", Observation{DaemonSet: newOnDelete, Pods: canaryReadyAt(98, restarted(2), notReady), Previous: state(PhaseCanary, now, "node-0")},
			nil, want{phase: PhaseFailed, strategy: "maxUnavailable 1", rollback: true, event: ReasonFailedUpdate, degraded: "node-0"}},
		{"increasing moves to waiting once the fast step is live", Observation{DaemonSet: daemonSet(newTgt, fast(), 2), Pods: canaryReadyAt(0), Previous: state(PhaseIncreasing, now, "node-0")},
			nil, want{phase: PhaseWaiting, strategy: "maxUnavailable 10%", event: "HandlerRolloutWaiting", requeue: 10 * time.Minute}},
		{"waits for the new rollout", Observation{DaemonSet: daemonSet(newTgt, fast(), 2), Pods: canaryReadyAt(0), Previous: state(PhaseWaiting, at(50), "node-0")},
			nil, want{phase: PhaseWaiting, strategy: "maxUnavailable 10%", requeue: 10*time.Minute - 50*time.Second}},
		{"completes the rollout", Observation{DaemonSet: daemonSet(newTgt, fast(), 2), Pods: pods(newTgt, 0, 2), Previous: state(PhaseWaiting, now, "node-0")},
			nil, want{phase: PhaseSuccessful, strategy: "maxUnavailable 1", record: true, done: true, event: "HandlerRolloutSuccessful"}},
		{"one crash after widening is tolerated and named", Observation{DaemonSet: daemonSet(newTgt, fast(), 3), Pods: with(pods(newTgt, 0, 1), pod("node-1", newTgt, at(10), restarted(1)), pod("node-2", oldTgt, t0)), Previous: state(PhaseWaiting, now, "node-0")},
			nil, want{phase: PhaseWaiting, strategy: "maxUnavailable 10%", requeue: 10 * time.Minute}},
		{"more crashes after widening than tolerated fail", Observation{DaemonSet: daemonSet(newTgt, fast(), 3), Pods: with(pods(newTgt, 0, 1), pod("node-1", newTgt, at(10), restarted(1)), pod("node-2", newTgt, at(10), restarted(2))), Previous: state(PhaseWaiting, now, "node-0")},
			nil, want{phase: PhaseFailed, strategy: "maxUnavailable 1", rollback: true, event: ReasonFailedUpdate, degraded: "2 updated pods crashed, more than the 1 tolerated after the canary; the first, pod virt-handler-new-node-1 on node node-1"}},
		{"a one-node cluster succeeds straight after the bake", Observation{DaemonSet: oneNode, Pods: pods(newTgt, 0, 1), Previous: state(PhaseCanary, now, "node-0")},
			nil, want{phase: PhaseSuccessful, strategy: "maxUnavailable 1", record: true, done: true, event: "HandlerRolloutSuccessful", canaryPod: "virt-handler-new-node-0"}},
		{"unknown generation with an up-to-date spec does not restart the canary", Observation{DaemonSet: newDefault, Pods: pods(newTgt, 0, 2), GenerationUnknown: true, Previous: state(PhaseSuccessful, t0)},
			nil, want{phase: PhaseSuccessful, strategy: "maxUnavailable 1", record: true, done: true}},
		{"unknown generation during an ongoing rollout continues it", Observation{DaemonSet: daemonSet(newTgt, fast(), 2), Pods: canaryReadyAt(0), GenerationUnknown: true, Previous: state(PhaseWaiting, at(50), "node-0")},
			nil, want{phase: PhaseWaiting, strategy: "maxUnavailable 10%", requeue: 10*time.Minute - 50*time.Second}},
		{"no stored state at 10% resumes waiting", Observation{DaemonSet: daemonSet(newTgt, fast(), 2), Pods: canaryReadyAt(0), GenerationUnknown: true},
			nil, want{phase: PhaseWaiting, strategy: "maxUnavailable 10%", event: "HandlerRolloutWaiting", requeue: 10 * time.Minute}},
		{"no stored state mid-canary resumes on the updated node", Observation{DaemonSet: newOnDelete, Pods: canaryReadyAt(97), GenerationUnknown: true},
			nil, want{phase: PhaseCanary, strategy: "OnDelete", event: "HandlerRolloutCanary", requeue: 7 * time.Second, canaryPod: "virt-handler-new-node-0"}},
		{"no stored state mid-canary still judges the canary", Observation{DaemonSet: newOnDelete, Pods: canaryReadyAt(97, restarted(1), createdAt(at(90))), GenerationUnknown: true},
			nil, want{phase: PhaseFailed, strategy: "maxUnavailable 1", rollback: true, event: ReasonFailedUpdate, degraded: "node-0"}},
		{"no stored state with too many updated pods widens", Observation{DaemonSet: daemonSet(newTgt, Default(), 3), Pods: with(pods(newTgt, 0, 2), pod("node-2", oldTgt, t0)), GenerationUnknown: true},
			nil, want{phase: PhaseIncreasing, strategy: "maxUnavailable 10%", event: "HandlerRolloutIncreasing", requeue: 10 * time.Minute}},
		{"nothing changed is idle", Observation{DaemonSet: newDefault, Pods: pods(newTgt, 0, 2), Previous: state(PhaseSuccessful, t0)},
			nil, want{phase: PhaseSuccessful, strategy: "maxUnavailable 1", done: true}},
		{"a restart from before the rollout is not a crash", Observation{DaemonSet: newDefault, Pods: with(pods(newTgt, 0, 1), pod("node-1", newTgt, t0, restarted(3), createdAt(t0.Add(-time.Hour)))), GenerationUnknown: true, Previous: state(PhaseSuccessful, t0)},
			nil, want{phase: PhaseSuccessful, strategy: "maxUnavailable 1", record: true, done: true}},
		{"more updated pods than desired is an error", Observation{DaemonSet: daemonSet(newTgt, fast(), 1), Pods: pods(newTgt, 0, 2), Previous: state(PhaseWaiting, now, "node-0")},
			nil, want{phase: PhaseWaiting, err: true}},
		{"failed holds its rollback for the same target", Observation{DaemonSet: oldDS, Pods: pods(oldTgt, 0, 2), SpecChanged: true,
			Previous: &State{Phase: PhaseFailed, TargetID: newTgt.ID, Message: "daemonSet virt-handler rollout failed: pod x"}},
			nil, want{phase: PhaseFailed, strategy: "maxUnavailable 1", rollback: true, degraded: "rollout failed: pod x"}},
		{"a new target after a failure starts again", Observation{DaemonSet: oldDS, Pods: pods(oldTgt, 0, 2), SpecChanged: true, Previous: &State{Phase: PhaseFailed, TargetID: "older"}},
			nil, want{phase: PhaseStarted, strategy: "OnDelete", event: "HandlerRolloutStarted", requeue: 10 * time.Minute}},
		{"only a spec change restarts a rollout in progress", Observation{DaemonSet: daemonSet(oldTgt, fast(), 2), Pods: canaryReadyAt(0), SpecChanged: true, Target: newTgt, Previous: &State{Phase: PhaseWaiting, TargetID: "other"}},
			nil, want{phase: PhaseStarted, strategy: "OnDelete", event: "HandlerRolloutStarted", requeue: 10 * time.Minute}},
		{"a metadata-only change mid-canary keeps the canary and judges it", Observation{DaemonSet: daemonSet(newTgt, OnDelete(), 2), Pods: canaryReadyAt(97, restarted(1), createdAt(t0.Add(-time.Hour))), SpecChanged: true, Previous: &State{Phase: PhaseCanary, TargetID: newTgt.ID, StartedAt: t0.Add(-2 * time.Hour), CanaryNodes: []string{"node-0"}}},
			nil, want{phase: PhaseFailed, strategy: "maxUnavailable 1", rollback: true, event: ReasonFailedUpdate, degraded: "node-0"}},
		{"a stuck canary reports Degraded", Observation{DaemonSet: newOnDelete, Pods: canaryReadyAt(0, notReady), Previous: state(PhaseCanary, now.Add(-11*time.Minute), "node-0")},
			nil, want{phase: PhaseCanary, strategy: "OnDelete", degraded: "stuck in phase Canary: no progress for 11m0s: canary on node-0: waiting for canary pod virt-handler-new-node-0", canaryPod: "virt-handler-new-node-0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs := tc.obs
			if obs.Target == (newTgt) || obs.Target.ID == "" {
				obs.Target = newTgt
			}
			obs.Now = now
			p := DefaultPolicy()
			if tc.p != nil {
				tc.p(&p)
			}
			d, err := Plan(obs, p)
			checkDecision(t, d, err, tc.want)
		})
	}
}

func checkDecision(t *testing.T, d Decision, err error, w want) {
	t.Helper()
	if (err != nil) != w.err {
		t.Fatalf("err = %v, want error %v", err, w.err)
	}
	got := ""
	if d.UpdateStrategy != nil {
		got = StrategyString(*d.UpdateStrategy)
	}
	if d.Phase != w.phase || got != w.strategy || d.Rollback != w.rollback || d.RecordGeneration != w.record || d.Done != w.done {
		t.Errorf("phase %s strategy %q rollback %v record %v done %v; want %s %q %v %v %v (message %q)",
			d.Phase, got, d.Rollback, d.RecordGeneration, d.Done, w.phase, w.strategy, w.rollback, w.record, w.done, d.State.Message)
	}
	if strings.Join(d.DeletePods, ",") != strings.Join(w.deletes, ",") {
		t.Errorf("deletes %v, want %v", d.DeletePods, w.deletes)
	}
	reason := ""
	if d.Event != nil {
		reason = d.Event.Reason
		if (d.Event.Type == EventTypeWarning) != (reason == ReasonFailedUpdate) {
			t.Errorf("event type %s for %s", d.Event.Type, reason)
		}
	}
	if reason != w.event {
		t.Errorf("event %q, want %q", reason, w.event)
	}
	if (d.Degraded == "") != (w.degraded == "" && w.phase != PhaseFailed) || !strings.Contains(d.Degraded, w.degraded) {
		t.Errorf("degraded %q, want %q", d.Degraded, w.degraded)
	}
	if d.RequeueAfter != w.requeue {
		t.Errorf("requeue %s, want %s", d.RequeueAfter, w.requeue)
	}
	if d.Status == nil || d.Status.Phase != string(d.Phase) || d.Status.CanaryPod != w.canaryPod && !w.err && w.phase != PhaseFailed && w.phase != PhaseSuccessful {
		t.Errorf("status %+v", d.Status)
	}
}

func TestPolicyValidate(t *testing.T) {
	if err := DefaultPolicy().Validate(); err != nil {
		t.Fatal(err)
	}
	for field, mut := range map[string]func(*Policy){
		"canarySize":       func(p *Policy) { p.CanarySize = 0 },
		"fastStep":         func(p *Policy) { p.FastStep.StrVal = "10" },
		"bakeTime":         func(p *Policy) { p.BakeTime = -time.Second },
		"progressDeadline": func(p *Policy) { p.PhaseDeadline = 0 },
	} {
		p := DefaultPolicy()
		mut(&p)
		err := p.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), field+":") {
			t.Errorf("%s: %v", field, err)
		}
		if _, err := Plan(Observation{DaemonSet: &appsv1.DaemonSet{}}, p); err == nil {
			t.Errorf("%s: Plan accepted an invalid policy", field)
		}
	}
	if _, err := Plan(Observation{}, DefaultPolicy()); err == nil {
		t.Error("Plan without a DaemonSet")
	}
}

func TestPolicyFromSpec(t *testing.T) {
	p, err := PolicyFrom(nil)
	if err != nil || p != DefaultPolicy() {
		t.Fatalf("PolicyFrom(nil) = %+v, %v; want the defaults", p, err)
	}
	size := int32(3)
	step := intstr.FromString("25%")
	p, err = PolicyFrom(&apiv1.HandlerRolloutPolicy{CanarySize: &size, FastStep: &step, BakeTime: &apiv1.Duration{Duration: time.Minute}})
	if err != nil || p.CanarySize != 3 || p.FastStep != step || p.BakeTime != time.Minute {
		t.Fatalf("PolicyFrom = %+v, %v", p, err)
	}
	zero := int32(0)
	if _, err := PolicyFrom(&apiv1.HandlerRolloutPolicy{CanarySize: &zero}); err == nil || !strings.Contains(err.Error(), "spec.handlerRollout: canarySize") {
		t.Fatalf("a zero canary size gave %v", err)
	}
	if _, err := PolicyFrom(&apiv1.HandlerRolloutPolicy{ProgressDeadline: &apiv1.Duration{Duration: time.Second}}); err == nil || !strings.Contains(err.Error(), "progressDeadline") {
		t.Fatalf("a deadline shorter than the bake gave %v", err)
	}
	for _, bad := range []intstr.IntOrString{intstr.FromString("150%"), intstr.FromString("many"), intstr.FromInt32(-1)} {
		if _, err := PolicyFrom(&apiv1.HandlerRolloutPolicy{MaxCrashing: &bad}); err == nil || !strings.Contains(err.Error(), "spec.handlerRollout: maxCrashing") {
			t.Errorf("maxCrashing %s gave %v", bad.String(), err)
		}
	}
	// Values stored under an older CRD that are not Go durations are named, never read as 0.
	for _, spec := range []*apiv1.HandlerRolloutPolicy{{BakeTime: &apiv1.Duration{Invalid: `"9999999999h"`}}, {ProgressDeadline: &apiv1.Duration{Invalid: `"7d"`}}} {
		want := `spec.handlerRollout: bakeTime: "9999999999h" is not a Go duration`
		if spec.ProgressDeadline != nil {
			want = `spec.handlerRollout: progressDeadline: "7d" is not a Go duration`
		}
		if _, err := PolicyFrom(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v gave %v, want %q", spec, err, want)
		}
	}
	three := intstr.FromInt32(3)
	if p, err := PolicyFrom(&apiv1.HandlerRolloutPolicy{MaxCrashing: &three}); err != nil || p.MaxCrashing != three {
		t.Fatalf("maxCrashing 3: %+v, %v", p, err)
	}
}

// After the widening a crash within Policy.AllowedCrashes holds nothing back
// and is named in the status message; during the canary any crash fails.
func TestCrashesAfterTheWidening(t *testing.T) {
	now := at(100)
	tolerated := Observation{DaemonSet: daemonSet(newTgt, fast(), 3), Now: now, Target: newTgt,
		Pods:     with(pods(newTgt, 0, 1), pod("node-1", newTgt, at(10), restarted(1)), pod("node-2", oldTgt, t0)),
		Previous: state(PhaseWaiting, now, "node-0")}
	d, err := Plan(tolerated, DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	if d.Phase != PhaseWaiting || !strings.Contains(d.Status.Message, "1 updated pods crashed, 1 tolerated after the canary (first: virt-handler-new-node-1 on node node-1)") {
		t.Fatalf("phase %s, message %q", d.Phase, d.Status.Message)
	}
	strict := DefaultPolicy()
	strict.MaxCrashing = intstr.FromInt32(0)
	if d, _ := Plan(tolerated, strict); d.Phase != PhaseFailed {
		t.Fatalf("maxCrashing 0: phase %s, want Failed", d.Phase)
	}
	canary := Observation{DaemonSet: daemonSet(newTgt, OnDelete(), 3), Now: now, Target: newTgt,
		Pods:     with(pods(oldTgt, 1, 3), pod("node-0", newTgt, at(10), restarted(1))),
		Previous: state(PhaseCanary, now, "node-0")}
	if d, _ := Plan(canary, DefaultPolicy()); d.Phase != PhaseFailed {
		t.Fatalf("a crashing canary: phase %s, want Failed", d.Phase)
	}
}

func TestAllowedCrashes(t *testing.T) {
	for _, tc := range []struct {
		max     intstr.IntOrString
		desired int32
		want    int
	}{
		{intstr.FromString("10%"), 3, 1},  // at least one pod
		{intstr.FromString("10%"), 20, 2}, // rounded down
		{intstr.FromString("10%"), 1000, 100},
		{intstr.FromString("0%"), 1000, 1}, // a percentage is at least one pod
		{intstr.FromInt32(0), 1000, 0},     // a count of 0 is strict
		{intstr.FromInt32(5), 3, 5},
	} {
		p := DefaultPolicy()
		p.MaxCrashing = tc.max
		if got := p.AllowedCrashes(tc.desired); got != tc.want {
			t.Errorf("%s of %d: %d, want %d", tc.max.String(), tc.desired, got, tc.want)
		}
	}
}

// The deadline counts from the last progress, not the phase change: a large
// rollout still moving after longer than the deadline is not stuck; one that
// stopped moving is.
func TestProgressDeadlineCountsFromTheLastProgress(t *testing.T) {
	p := DefaultPolicy()
	start := at(0)
	prev := &State{Phase: PhaseWaiting, TargetID: newTgt.ID, CanaryNodes: []string{"node-0"}, StartedAt: start,
		PhaseChangeAt: start, ProgressAt: start.Add(10 * time.Minute), Updated: 5, Ready: 5}
	moving := Observation{DaemonSet: daemonSet(newTgt, fast(), 10), Target: newTgt, Previous: prev,
		Pods: with(pods(newTgt, 0, 6), pods(oldTgt, 6, 10)...), Now: start.Add(11 * time.Minute)}
	d, err := Plan(moving, p)
	if err != nil {
		t.Fatal(err)
	}
	if d.Degraded != "" || !d.State.ProgressAt.Equal(moving.Now) || d.State.Updated != 6 {
		t.Fatalf("a rollout that moved: degraded %q, progress at %s, updated %d", d.Degraded, d.State.ProgressAt, d.State.Updated)
	}
	if d.Status.LastProgressAt == nil || !d.Status.LastProgressAt.Time.Equal(moving.Now) {
		t.Fatalf("status lastProgressAt %v, want %s", d.Status.LastProgressAt, moving.Now)
	}
	stalled := moving
	stalled.Previous = &d.State
	stalled.Now = moving.Now.Add(p.PhaseDeadline)
	if d, _ := Plan(stalled, p); !strings.Contains(d.Degraded, "no progress for 10m0s") {
		t.Fatalf("no progress for the deadline: degraded %q", d.Degraded)
	}
}

// Nodes that are not Ready (or gone): never canaries, a canary there is
// replaced, and they do not hold the rollout's completion, which names them.
func TestUnavailableNodes(t *testing.T) {
	ready := func(notReady ...string) map[string]bool {
		m := map[string]bool{}
		for i := range 20 {
			m[fmt.Sprintf("node-%d", i)] = true
		}
		for _, n := range notReady {
			m[n] = false
		}
		return m
	}
	now := at(100)

	fresh := Observation{DaemonSet: daemonSet(newTgt, OnDelete(), 3), Target: newTgt, Now: now,
		Pods: pods(oldTgt, 0, 3), NodeReady: ready("node-0"), Previous: state(PhaseCanary, now)}
	d, _ := Plan(fresh, DefaultPolicy())
	if d.State.CanaryNodes[0] != "node-1" || !slices.Equal(d.DeletePods, []string{"virt-handler-old-node-1"}) {
		t.Fatalf("a NotReady node picked as canary: nodes %v, deletes %v", d.State.CanaryNodes, d.DeletePods)
	}

	gone := fresh
	delete(gone.NodeReady, "node-0")
	gone.Pods = pods(oldTgt, 1, 3) // the node and its pod are gone
	gone.Previous = state(PhaseCanary, now, "node-0")
	if d, _ := Plan(gone, DefaultPolicy()); !slices.Equal(d.State.CanaryNodes, []string{"node-1"}) {
		t.Fatalf("the canary node went away: canaries %v, want node-1 instead", d.State.CanaryNodes)
	}

	// 19 of 20 nodes run the target; node-7 is NotReady with its old pod.
	done := Observation{DaemonSet: daemonSet(newTgt, fast(), 20), Target: newTgt, Now: now,
		Pods: with(pods(newTgt, 0, 7), append(pods(newTgt, 8, 20), pod("node-7", oldTgt, t0))...), NodeReady: ready("node-7"),
		Previous: state(PhaseWaiting, now, "node-0")}
	d, _ = Plan(done, DefaultPolicy())
	if d.Phase != PhaseSuccessful || !d.Done || !slices.Equal(d.LeftOut, []string{"node-7"}) ||
		!strings.Contains(d.Status.Message, "1 nodes left out, not Ready: node-7") {
		t.Fatalf("phase %s done %v left out %v message %q; want Successful leaving node-7 out", d.Phase, d.Done, d.LeftOut, d.Status.Message)
	}
	if d.Event == nil || !strings.Contains(d.Event.Message, "node-7") {
		t.Fatalf("the completion Event does not name node-7: %+v", d.Event)
	}

	// Without node information every node counts: the old pod holds the rollout.
	unknown := done
	unknown.NodeReady = nil
	if d, _ := Plan(unknown, DefaultPolicy()); d.Phase != PhaseWaiting {
		t.Fatalf("no node information: phase %s, want Waiting", d.Phase)
	}
	// Every node but the NotReady one must run the target.
	stillOld := done
	stillOld.Pods = with(pods(newTgt, 0, 7), append(pods(newTgt, 8, 19), pod("node-7", oldTgt, t0), pod("node-19", oldTgt, t0))...)
	if d, _ := Plan(stillOld, DefaultPolicy()); d.Phase != PhaseWaiting || !strings.Contains(d.Status.Message, "node-7") {
		t.Fatalf("an old pod on a Ready node: phase %s (%q), want Waiting naming node-7", d.Phase, d.Status.Message)
	}
}

// At rest after a rollout that left a node out, the node stays left out.
func TestIdleKeepsLeftOutNodes(t *testing.T) {
	nodeReady := map[string]bool{"node-0": true, "node-1": false}
	obs := Observation{DaemonSet: daemonSet(newTgt, Default(), 2), Target: newTgt, Now: at(100),
		Pods: with(pods(newTgt, 0, 1), pod("node-1", oldTgt, t0)), NodeReady: nodeReady,
		Previous: state(PhaseSuccessful, at(50), "node-0")}
	d, _ := Plan(obs, DefaultPolicy())
	if !d.Done || !slices.Equal(d.LeftOut, []string{"node-1"}) {
		t.Fatalf("done %v, left out %v; want done, node-1 left out", d.Done, d.LeftOut)
	}
}
