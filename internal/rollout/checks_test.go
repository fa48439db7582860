package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	apiv1 "github.com/virt-operator/virt-operator/api/v1"
)

// The canary VMIs check: the VMIs on the canary node when the canary begins
// are recorded, and one that fails, is restarted or loses its node fails
// the rollout, during the bake as after it; one stopped by its owner does not.
func TestCanaryVMIsCheck(t *testing.T) {
	watchedA := []WatchedVMI{{Namespace: "default", Name: "a", UID: "uid-a", Node: "node-0"}}
	baking := func(prev Checks, vmis ...apiv1.VirtualMachineInstance) Observation {
		obs := canaryObs(PhaseCanary, prev, &DataPlane{VMIs: vmis})
		obs.Pods = with(pods(oldTgt, 1, 3), pod("node-0", newTgt, at(95)))
		return obs
	}
	watching := Checks{Results: []CheckResult{running(CheckCanaryVMIs)}, Watched: watchedA}
	cases := []struct {
		name    string
		obs     Observation
		phase   Phase
		watched []string
		why     string // substring of the failure; "" for none
	}{
		{"the VMIs running on the canary node are recorded when the canary begins",
			baking(Checks{}, vmi("a", "node-0"), vmi("b", "node-1"), vmi("c", "node-0", vmiPhase(apiv1.VMIScheduling))),
			PhaseCanary, []string{"default/a"}, ""},
		{"a watched VMI that stays is fine", baking(watching, vmi("a", "node-0")), PhaseCanary, []string{"default/a"}, ""},
		{"a watched VMI that failed during the bake fails the canary", baking(watching, vmi("a", "node-0", vmiPhase(apiv1.VMIFailed))),
			PhaseFailed, nil, "data-plane check CanaryVMIs failed on VMI default/a: VMI default/a failed on node node-0"},
		{"one its VM restarted (a new UID) is lost", baking(watching, vmi("a", "node-0", uid("uid-a2"))),
			PhaseFailed, nil, "VMI default/a was restarted"},
		{"one in phase Unknown is lost", baking(watching, vmi("a", "node-0", vmiPhase(apiv1.VMIUnknown))),
			PhaseFailed, nil, "VMI default/a is Unknown on node node-0"},
		{"one that runs on no node lost it", baking(watching, vmi("a", "")),
			PhaseFailed, nil, "VMI default/a lost its node node-0: it runs on no node"},
		{"one moved off by a live migration is fine", baking(watching, vmi("a", "node-0", movedBy("m1", "node-0", "node-2", true, false, ""))),
			PhaseCanary, []string{"default/a"}, ""},
		{"one moved off and now migrating back is fine", baking(watching, vmi("a", "node-2", func(v *apiv1.VirtualMachineInstance) {
			v.Status.MigrationState = &apiv1.VirtualMachineInstanceMigrationState{MigrationUID: "m2", SourceNode: "node-2", TargetNode: "node-0"}
		})), PhaseCanary, []string{"default/a"}, ""},
		{"one whose guest shut down is not held against the canary", baking(watching, vmi("a", "node-0", vmiPhase(apiv1.VMISucceeded))),
			PhaseCanary, []string{"default/a"}, ""},
		{"one deleted by its owner is not held against it", baking(watching), PhaseCanary, []string{"default/a"}, ""},
		{"once baked, with no probe, the checks pass and the rollout widens", canaryObs(PhaseCanary, watching, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("a", "node-0")}}),
			PhaseIncreasing, []string{"default/a"}, ""},
		{"after the bake a failure is judged in Verifying", canaryObs(PhaseVerifying, watching, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("a", "node-0", vmiPhase(apiv1.VMIFailed))}}),
			PhaseFailed, nil, "VMI default/a failed on node node-0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Plan(tc.obs, withChecks(DataPlaneChecks{CanaryVMIs: true}))
			if err != nil {
				t.Fatal(err)
			}
			if d.Phase != tc.phase {
				t.Fatalf("phase %s, want %s (%s)", d.Phase, tc.phase, d.State.Message)
			}
			if tc.why != "" {
				r := d.State.Checks.result(CheckCanaryVMIs)
				if !d.Rollback || d.Event == nil || d.Event.Reason != ReasonDataPlaneCheckFailed || !strings.Contains(d.Event.Message, tc.why) ||
					!strings.Contains(d.Degraded, tc.why) || r == nil || r.State != CheckFailed || r.VMI != "default/a" {
					t.Fatalf("want a rollback, a Warning and Degraded naming %q, the check Failed on default/a; got rollback %v, event %+v, degraded %q, result %+v",
						tc.why, d.Rollback, d.Event, d.Degraded, r)
				}
				return
			}
			var got []string
			for _, w := range d.State.Checks.Watched {
				got = append(got, w.String())
			}
			if !slices.Equal(got, tc.watched) {
				t.Fatalf("watched %v, want %v", got, tc.watched)
			}
			if r := d.State.Checks.result(CheckCanaryVMIs); r == nil || r.State == CheckFailed {
				t.Fatalf("the check: %+v", r)
			}
		})
	}
}

// A canary node that replaced another (the first one went away before its
// pod proved itself) has its own VMIs watched, not the first one's.
func TestCanaryVMIsFollowAReplacedCanaryNode(t *testing.T) {
	prev := Checks{Results: []CheckResult{running(CheckCanaryVMIs)}, Watched: []WatchedVMI{{Namespace: "default", Name: "gone", UID: "uid-gone", Node: "node-1"}}}
	obs := canaryObs(PhaseCanary, prev, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("a", "node-0"), vmi("gone", "node-1")}})
	obs.Previous.CanaryNodes = []string{"node-1"}
	obs.NodeReady = map[string]bool{"node-0": true, "node-1": false, "node-2": true}
	obs.Pods = with(pods(oldTgt, 0, 3))
	d, err := Plan(obs, withChecks(DataPlaneChecks{CanaryVMIs: true}))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.State.CanaryNodes) != 1 || d.State.CanaryNodes[0] != "node-0" || len(d.State.Checks.Watched) != 1 || d.State.Checks.Watched[0].Name != "a" {
		t.Fatalf("canary %v watching %+v, want node-0 watching default/a", d.State.CanaryNodes, d.State.Checks.Watched)
	}
}

// The canary pod check: from the bake's end the canary stays Ready with no
// restart, on a node virt-handler does not mark unschedulable.
func TestCanaryPodCheck(t *testing.T) {
	checking := Checks{Results: []CheckResult{running(CheckCanaryPod)}}
	notReadyCanary := func(o Observation) Observation {
		o.Pods = with(pods(oldTgt, 1, 3), pod("node-0", newTgt, at(0), notReady))
		return o
	}
	crashed := func(o Observation) Observation {
		o.Pods = with(pods(oldTgt, 1, 3), pod("node-0", newTgt, at(0), restarted(1)))
		return o
	}
	unschedulable := &DataPlane{Nodes: []corev1.Node{readyNode("node-0", "kubevirt.io/schedulable", "false"), readyNode("node-1"), readyNode("node-2")}}
	for _, tc := range []struct {
		name   string
		checks DataPlaneChecks
		obs    Observation
		phase  Phase
		why    string
	}{
		{"healthy: passes and widens", DataPlaneChecks{CanaryPod: true}, canaryObs(PhaseVerifying, checking, &DataPlane{}), PhaseIncreasing, ""},
		{"not Ready fails the check", DataPlaneChecks{CanaryPod: true}, notReadyCanary(canaryObs(PhaseVerifying, checking, &DataPlane{})),
			PhaseFailed, "data-plane check CanaryPod failed: the canary pod virt-handler-new-node-0 on node node-0 is not Ready"},
		{"without the check, not Ready bakes again", probeOn("app=probe"), notReadyCanary(canaryObs(PhaseVerifying, Checks{}, &DataPlane{})), PhaseCanary, ""},
		{"a node marked kubevirt.io/schedulable=false fails it", DataPlaneChecks{CanaryPod: true}, canaryObs(PhaseVerifying, checking, unschedulable),
			PhaseFailed, "node node-0 is marked kubevirt.io/schedulable=false"},
		{"a restart fails the rollout and the check", DataPlaneChecks{CanaryPod: true}, crashed(canaryObs(PhaseVerifying, checking, &DataPlane{})),
			PhaseFailed, "pod virt-handler-new-node-0 on node node-0 crashed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Plan(tc.obs, withChecks(tc.checks))
			if err != nil {
				t.Fatal(err)
			}
			if d.Phase != tc.phase {
				t.Fatalf("phase %s, want %s (%s)", d.Phase, tc.phase, d.State.Message)
			}
			r := d.State.Checks.result(CheckCanaryPod)
			switch {
			case tc.why != "" && (r == nil || r.State != CheckFailed || !strings.Contains(r.Message, strings.TrimPrefix(tc.why, "data-plane check CanaryPod failed: ")) || !d.Rollback):
				t.Fatalf("want the check Failed (%q) and a rollback: %+v, rollback %v, message %q", tc.why, r, d.Rollback, d.State.Message)
			case tc.why != "" && !strings.Contains(d.State.Message, strings.TrimPrefix(tc.why, "data-plane check CanaryPod failed: ")):
				t.Fatalf("message %q lacks %q", d.State.Message, tc.why)
			case tc.phase == PhaseIncreasing && (r == nil || r.State != CheckPassed || r.FinishedAt != at(100)):
				t.Fatalf("want the check Passed at 100: %+v", r)
			}
		})
	}
}

// The migration probe's decisions, one pass each: what it moves, when it
// waits, when it passes, fails or is skipped, on a fake clock.
func TestMigrationProbe(t *testing.T) {
	key := ProbeKey(newTgt.ID, t0)
	probeRunning := func(ps *ProbeState, deadline time.Time) Checks {
		r := running(CheckMigrationProbe)
		r.Deadline = deadline
		return Checks{Results: []CheckResult{r}, Probe: ps}
	}
	fresh := Checks{}
	type want struct {
		phase    Phase
		state    CheckState
		create   string // "NAME DIRECTION HOSTNAME-SELECTOR" of the migration created; "" for none
		abort    []string
		message  string // substring of the check's message
		vmi      string
		deadline time.Time
	}
	onto0 := probeMigration(0, Onto, "b", apiv1.MigrationRunning)
	cases := []struct {
		name   string
		checks DataPlaneChecks
		obs    Observation
		want   want
	}{
		{"a VMI on the canary node is moved off it first", probeOn("app=probe"),
			canaryObs(PhaseVerifying, fresh, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-1"), vmi("a", "node-0")}}),
			want{phase: PhaseVerifying, state: CheckRunning, create: ProbeMigrationName(key, 0) + " Off node-1", vmi: "default/a", deadline: at(100).Add(DefaultProbeTimeout)}},
		{"off the canary node it goes to a node no other migration touches", probeOn("app=probe"),
			canaryObs(PhaseVerifying, fresh, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("a", "node-0")}},
				Migration{Namespace: "default", Name: "users", SourceNode: "node-1", TargetNode: "node-9"}),
			want{phase: PhaseVerifying, state: CheckRunning, create: ProbeMigrationName(key, 0) + " Off node-2", vmi: "default/a"}},
		{"with every other node busy it waits", probeOn("app=probe"),
			canaryObs(PhaseVerifying, fresh, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("a", "node-0")}},
				Migration{Namespace: "default", Name: "users", SourceNode: "node-1", TargetNode: "node-2"}),
			want{phase: PhaseVerifying, state: CheckHolding, message: "waiting: VMI default/a: no other node free of migrations can take it off the canary node"}},
		{"a VMI elsewhere is moved onto the canary node by its hostname", probeOn("app=probe"),
			canaryObs(PhaseVerifying, fresh, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-1")}}),
			want{phase: PhaseVerifying, state: CheckRunning, create: ProbeMigrationName(key, 0) + " Onto node-0", vmi: "default/b"}},
		{"nothing selected holds, saying so", probeOn("app=probe"),
			canaryObs(PhaseVerifying, fresh, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-1", unlabelled)}}),
			want{phase: PhaseVerifying, state: CheckHolding, message: "no VMI matches vmiSelector app=probe: holding until one can be moved (whenNoneEligible: Hold)"}},
		{"nothing eligible passes when the setting says Pass", passWhenNone(probeOn("app=probe")),
			canaryObs(PhaseVerifying, fresh, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-1", notMigratable)}}),
			want{phase: PhaseIncreasing, state: CheckSkipped, message: "1 VMIs match vmiSelector app=probe, none can be moved: default/b not live-migratable: passed without a migration"}},
		{"a VM opted out is never moved", probeOn("app=probe"),
			canaryObs(PhaseVerifying, fresh, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-1", choice("None")), vmi("c", "node-2", choice("Evict"))}}),
			want{phase: PhaseVerifying, state: CheckHolding, message: "default/b opted out of migrations (kubevirt.io/workload-update-method=None); default/c opted out"}},
		{"an opted-out VM is passed over for one that may move", probeOn("app=probe"),
			canaryObs(PhaseVerifying, fresh, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("a", "node-0", choice("None")), vmi("b", "node-1")}}),
			want{phase: PhaseVerifying, state: CheckRunning, create: ProbeMigrationName(key, 0) + " Onto node-0", vmi: "default/b"}},
		{"another migration on the VMI's node: it waits", probeOn("app=probe"),
			canaryObs(PhaseVerifying, fresh, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-1")}},
				Migration{Namespace: "default", Name: "users", SourceNode: "node-1", TargetNode: "node-2"}),
			want{phase: PhaseVerifying, state: CheckHolding, message: "waiting: VMI default/b: migration default/users runs on node node-1"}},
		{"another migration on the canary node: it waits", probeOn("app=probe"),
			canaryObs(PhaseVerifying, fresh, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-1")}},
				Migration{Namespace: "default", Name: "users", SourceNode: "node-2", TargetNode: "node-0"}),
			want{phase: PhaseVerifying, state: CheckHolding, message: "migration default/users runs on node node-0"}},
		{"the caps leave no room: it waits", probeOn("app=probe"),
			capped(canaryObs(PhaseVerifying, fresh, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-1"), vmi("x", "node-2")},
				Migrations: []apiv1.VirtualMachineInstanceMigration{usersRunning("x")}})),
			want{phase: PhaseVerifying, state: CheckHolding, message: "1 migrations run in the cluster, the most parallelMigrationsPerCluster allows (1)"}},
		{"a VMI that does not fit the canary node is not moved onto it", probeOn("app=probe"),
			canaryObs(PhaseVerifying, fresh, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-1", placed(`{"nodeSelector":{"zone":"b"}}`))}}),
			want{phase: PhaseVerifying, state: CheckHolding, message: "default/b node node-0 does not match its node selector"}},
		{"paused: no migration starts", probeOn("app=probe"),
			paused(canaryObs(PhaseVerifying, fresh, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-1")}})),
			want{phase: PhaseVerifying, state: CheckHolding, message: "paused"}},
		{"a move under way is waited for until its deadline", probeOn("app=probe"),
			canaryObs(PhaseVerifying, probeRunning(probing("b", move(0, Onto, ""), ProbeMove{Direction: Off}, ProbeMove{Direction: Onto}), since(DefaultProbeTimeout)),
				&DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-1")}, Migrations: []apiv1.VirtualMachineInstanceMigration{onto0}}),
			want{phase: PhaseVerifying, state: CheckRunning, message: "move 1 of 3: live migration " + ProbeMigrationName(key, 0) + " of VMI default/b onto node node-0 is Running"}},
		{"past the deadline it fails and the migration is aborted", probeOn("app=probe"),
			late(canaryObs(PhaseVerifying, probeRunning(probing("b", move(0, Onto, ""), ProbeMove{Direction: Off}, ProbeMove{Direction: Onto}), since(DefaultProbeTimeout)),
				&DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-1")}, Migrations: []apiv1.VirtualMachineInstanceMigration{onto0}}), since(DefaultProbeTimeout)),
			want{phase: PhaseFailed, state: CheckFailed, abort: []string{"default/" + ProbeMigrationName(key, 0)}, vmi: "default/b",
				message: "timed out after 5m0s: live migration " + ProbeMigrationName(key, 0) + " of VMI default/b onto node node-0 is still Running"}},
		{"a failed migration fails the check with its reason", probeOn("app=probe"),
			canaryObs(PhaseVerifying, probeRunning(probing("b", move(0, Onto, ""), ProbeMove{Direction: Off}, ProbeMove{Direction: Onto}), since(DefaultProbeTimeout)),
				&DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-1", movedBy(onto0.UID, "node-1", "node-0", true, true, "virt-handler on node-0 refused it"))},
					Migrations: []apiv1.VirtualMachineInstanceMigration{withPhase(onto0, apiv1.MigrationFailed)}}),
			want{phase: PhaseFailed, state: CheckFailed, vmi: "default/b", message: "live migration " + ProbeMigrationName(key, 0) + " of VMI default/b onto node node-0 failed: virt-handler on node-0 refused it"}},
		{"a finished move leads to the next", probeOn("app=probe"),
			canaryObs(PhaseVerifying, probeRunning(probing("b", move(0, Onto, ""), ProbeMove{Direction: Off}, ProbeMove{Direction: Onto}), since(DefaultProbeTimeout)),
				&DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-1", movedBy(onto0.UID, "node-1", "node-0", true, false, ""))},
					Migrations: []apiv1.VirtualMachineInstanceMigration{withPhase(onto0, apiv1.MigrationSucceeded)}}),
			want{phase: PhaseVerifying, state: CheckRunning, create: ProbeMigrationName(key, 1) + " Off node-1", deadline: since(DefaultProbeTimeout)}},
		{"every move done, the VMI on the canary node: passed, and the rollout widens", probeOn("app=probe"),
			canaryObs(PhaseVerifying, probeRunning(probing("b", move(0, Off, "Succeeded"), move(1, Onto, "")), since(DefaultProbeTimeout)),
				&DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-0", movedBy("m1", "node-2", "node-0", true, false, ""))},
					Migrations: []apiv1.VirtualMachineInstanceMigration{probeMigration(1, Onto, "b", apiv1.MigrationSucceeded)}}),
			want{phase: PhaseIncreasing, state: CheckPassed, message: "VMI default/b moved off node node-0 and back onto it (2 live migrations in 40s)"}},
		{"the VMI gone after a move fails the probe", probeOn("app=probe"),
			canaryObs(PhaseVerifying, probeRunning(probing("b", move(0, Onto, "Succeeded"), ProbeMove{Direction: Off}, ProbeMove{Direction: Onto}), since(DefaultProbeTimeout)),
				&DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-0", vmiPhase(apiv1.VMIFailed))}}),
			want{phase: PhaseFailed, state: CheckFailed, message: "VMI default/b is Failed after the probe moved it"}},
		{"a status that lost the probe adopts its migration, and creates no second one", probeOn("app=probe"),
			canaryObs(PhaseVerifying, fresh, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-1"), vmi("a", "node-0")},
				Migrations: []apiv1.VirtualMachineInstanceMigration{onto0}}),
			want{phase: PhaseVerifying, state: CheckRunning, vmi: "default/b", deadline: since(DefaultProbeTimeout), message: "move 1 of 3"}},
		{"a migration just created and not yet in the cache is waited for", probeOn("app=probe"),
			canaryObs(PhaseVerifying, probeRunning(probing("b", ProbeMove{Direction: Onto, Migration: ProbeMigrationName(key, 0), CreatedAt: at(90)}, ProbeMove{Direction: Off}, ProbeMove{Direction: Onto}), at(90).Add(DefaultProbeTimeout)),
				&DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-1")}}),
			want{phase: PhaseVerifying, state: CheckRunning, message: "is not started yet"}},
		{"a migration deleted by someone else fails the probe", probeOn("app=probe"),
			canaryObs(PhaseVerifying, probeRunning(probing("b", move(0, Onto, "Running"), ProbeMove{Direction: Off}, ProbeMove{Direction: Onto}), since(DefaultProbeTimeout)),
				&DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-1")}}),
			want{phase: PhaseFailed, state: CheckFailed, message: "was deleted before it finished"}},
		{"an earlier rollout's unfinished probe migration is aborted", probeOn("app=probe"),
			canaryObs(PhaseVerifying, fresh, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("b", "node-1", movedBy("stale", "node-1", "node-2", false, false, ""))},
				Migrations: []apiv1.VirtualMachineInstanceMigration{staleProbe()}}),
			want{phase: PhaseVerifying, state: CheckHolding, abort: []string{"default/kubevirt-handler-probe-0123456789-0"}, message: "already migrating"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Plan(tc.obs, withChecks(tc.checks))
			if err != nil {
				t.Fatal(err)
			}
			r := d.State.Checks.result(CheckMigrationProbe)
			if d.Phase != tc.want.phase || r == nil || r.State != tc.want.state {
				t.Fatalf("phase %s, check %+v; want phase %s, state %s (%s)", d.Phase, r, tc.want.phase, tc.want.state, d.State.Message)
			}
			if !strings.Contains(r.Message, tc.want.message) {
				t.Errorf("message %q, want it to contain %q", r.Message, tc.want.message)
			}
			if got := created(d); got != tc.want.create {
				t.Errorf("created %q, want %q", got, tc.want.create)
			}
			var aborted []string
			for _, a := range d.AbortMigrations {
				aborted = append(aborted, a.String())
			}
			if !slices.Equal(aborted, tc.want.abort) {
				t.Errorf("aborted %v, want %v", aborted, tc.want.abort)
			}
			if tc.want.vmi != "" && r.VMI != tc.want.vmi {
				t.Errorf("VMI %q, want %q", r.VMI, tc.want.vmi)
			}
			if !tc.want.deadline.IsZero() && !r.Deadline.Equal(tc.want.deadline) {
				t.Errorf("deadline %s, want %s", r.Deadline, tc.want.deadline)
			}
			if tc.want.state == CheckFailed && (!d.Rollback || d.Event == nil || d.Event.Reason != ReasonDataPlaneCheckFailed ||
				!strings.Contains(d.Event.Message, "data-plane check MigrationProbe failed on VMI default/b: ") || !strings.Contains(d.Event.Message, tc.want.message)) {
				t.Errorf("a failed probe must roll back with a Warning naming the check, VMI and error; rollback %v, event %+v", d.Rollback, d.Event)
			}
			if d.Phase == PhaseVerifying && (d.RequeueAfter <= 0 || d.RequeueAfter > checkRecheck) {
				t.Errorf("requeue after %s while the probe runs, want at most %s", d.RequeueAfter, checkRecheck)
			}
		})
	}
}

// A failed rollout whose probe migration is still unfinished (its delete
// failed) aborts it again on the next pass, then needs no cluster reads.
func TestFailedRolloutAbortsItsProbeMigration(t *testing.T) {
	st := state(PhaseFailed, at(50), "node-0")
	st.Checks = Checks{Results: []CheckResult{{Name: CheckMigrationProbe, State: CheckFailed}},
		Probe: probing("b", move(0, Onto, "Running"), ProbeMove{Direction: Off}, ProbeMove{Direction: Onto})}
	obs := Observation{DaemonSet: daemonSet(oldTgt, Default(), 3), Pods: pods(oldTgt, 0, 3), Target: newTgt, SpecChanged: true, Previous: st, Now: at(100)}
	p := withChecks(probeOn("app=probe"))
	if !NeedsDataPlane(obs, p) {
		t.Fatal("a failed rollout with an unfinished probe migration must read the cluster")
	}
	d, err := Plan(obs, p)
	if err != nil {
		t.Fatal(err)
	}
	if d.Phase != PhaseFailed || len(d.AbortMigrations) != 1 || d.AbortMigrations[0].Name != ProbeMigrationName(ProbeKey(newTgt.ID, t0), 0) {
		t.Fatalf("phase %s, aborts %v", d.Phase, d.AbortMigrations)
	}
	obs.Previous = &d.State
	if NeedsDataPlane(obs, p) {
		t.Fatal("once aborted, a failed rollout reads nothing more")
	}
}

func TestNeedsDataPlane(t *testing.T) {
	ds := daemonSet(newTgt, OnDelete(), 3)
	rest := daemonSet(newTgt, Default(), 3)
	checks := withChecks(DataPlaneChecks{CanaryPod: true})
	for _, tc := range []struct {
		name string
		obs  Observation
		p    Policy
		want bool
	}{
		{"no checks: never", Observation{DaemonSet: ds, Previous: state(PhaseCanary, t0)}, DefaultPolicy(), false},
		{"a new rollout", Observation{DaemonSet: ds, SpecChanged: true}, checks, true},
		{"in Canary", Observation{DaemonSet: ds, Previous: state(PhaseCanary, t0)}, checks, true},
		{"in Verifying", Observation{DaemonSet: ds, Previous: state(PhaseVerifying, t0)}, checks, true},
		{"once widened, no more", Observation{DaemonSet: ds, Previous: state(PhaseWaiting, t0)}, checks, false},
		{"at rest", Observation{DaemonSet: rest, Previous: state(PhaseSuccessful, t0)}, checks, false},
		{"a failed rollout with nothing unfinished", Observation{DaemonSet: ds, Previous: state(PhaseFailed, t0)}, checks, false},
	} {
		if got := NeedsDataPlane(tc.obs, tc.p); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// What the checks decided survives a round trip through status: a restarted
// operator resumes the probe where it was.
func TestChecksRoundTripThroughStatus(t *testing.T) {
	obs := canaryObs(PhaseVerifying, Checks{}, &DataPlane{VMIs: []apiv1.VirtualMachineInstance{vmi("a", "node-0")}})
	p := withChecks(DataPlaneChecks{CanaryVMIs: true, CanaryPod: true, Probe: probeOn("app=probe").Probe})
	obs.Previous.Checks = Checks{Results: []CheckResult{running(CheckCanaryVMIs)}, Watched: []WatchedVMI{{Namespace: "default", Name: "a", UID: "uid-a", Node: "node-0"}}}
	d, err := Plan(obs, p)
	if err != nil {
		t.Fatal(err)
	}
	if d.CreateMigration == nil {
		t.Fatalf("no probe migration created: %s", d.State.Message)
	}
	back := StateFromStatus(d.Status, d.State.TargetID)
	want := d.State.Checks
	if len(back.Checks.Results) != 3 || back.Checks.Probe == nil || back.Checks.Probe.VMI() != "default/a" ||
		back.Checks.Probe.Moves[0].Migration != want.Probe.Moves[0].Migration || !back.Checks.Results[2].Deadline.Equal(want.Results[2].Deadline) ||
		len(back.Checks.Watched) != 1 || back.Checks.Watched[0] != want.Watched[0] {
		t.Fatalf("read back %+v, want %+v", back.Checks, want)
	}
	// The next pass from the stored state waits for that migration: no second create.
	obs.Previous, obs.Now = back, at(101)
	obs.DataPlane.Migrations = []apiv1.VirtualMachineInstanceMigration{probeMigration(0, Off, "a", apiv1.MigrationScheduling)}
	d, err = Plan(obs, p)
	if err != nil {
		t.Fatal(err)
	}
	if d.CreateMigration != nil || d.Phase != PhaseVerifying {
		t.Fatalf("created %v in %s", d.CreateMigration, d.Phase)
	}
}

// A change of a check's state is written at once, not held as progress.
func TestCheckChangesAreNotHeldBack(t *testing.T) {
	prev := &apiv1.HandlerRolloutStatus{Phase: "Verifying", DataPlaneChecks: []apiv1.HandlerDataPlaneCheck{{Name: "MigrationProbe", State: "Holding"}}}
	next := prev.DeepCopy()
	next.DataPlaneChecks[0].State = "Running"
	next.MigrationProbe = &apiv1.HandlerMigrationProbeStatus{VMI: "default/a", Moves: []apiv1.HandlerProbeMove{{Direction: "Off", Migration: "m"}}}
	if hold, _ := HoldProgress(prev, next, at(0), at(0).Add(100*time.Millisecond)); hold {
		t.Fatal("a probe migration created was held back")
	}
	msgOnly := prev.DeepCopy()
	msgOnly.DataPlaneChecks[0].Message = "still waiting"
	if hold, _ := HoldProgress(prev, msgOnly, at(0), at(0).Add(100*time.Millisecond)); !hold {
		t.Fatal("a message-only change was written at once")
	}
}

func TestChecksPolicyFrom(t *testing.T) {
	sel := func(l map[string]string) *apiv1.HandlerMigrationProbe {
		return &apiv1.HandlerMigrationProbe{VMISelector: metaSelector(l)}
	}
	for _, tc := range []struct {
		name string
		spec *apiv1.HandlerDataPlaneChecks
		want string // error substring; "" for none
	}{
		{"none", nil, ""},
		{"the probe with a selector", &apiv1.HandlerDataPlaneChecks{MigrationProbe: sel(map[string]string{"app": "probe"})}, ""},
		{"an empty selector is refused", &apiv1.HandlerDataPlaneChecks{MigrationProbe: sel(nil)},
			"spec.handlerRollout.dataPlaneChecks.migrationProbe.vmiSelector: must select something"},
		{"a bad selector names the field", &apiv1.HandlerDataPlaneChecks{MigrationProbe: &apiv1.HandlerMigrationProbe{VMISelector: badSelector()}},
			"spec.handlerRollout.dataPlaneChecks.migrationProbe.vmiSelector:"},
		{"a zero timeout", &apiv1.HandlerDataPlaneChecks{MigrationProbe: withTimeout(sel(map[string]string{"a": "b"}), &apiv1.Duration{})},
			"spec.handlerRollout.dataPlaneChecks.migrationProbe.timeout: must be positive"},
		{"a timeout that is not a duration", &apiv1.HandlerDataPlaneChecks{MigrationProbe: withTimeout(sel(map[string]string{"a": "b"}), &apiv1.Duration{Invalid: `"5 minutes"`})},
			"spec.handlerRollout.dataPlaneChecks.migrationProbe.timeout"},
		{"an unknown whenNoneEligible", &apiv1.HandlerDataPlaneChecks{MigrationProbe: &apiv1.HandlerMigrationProbe{VMISelector: metaSelector(map[string]string{"a": "b"}), WhenNoneEligible: "Maybe"}},
			"whenNoneEligible: must be Hold or Pass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PolicyFrom(&apiv1.HandlerRolloutPolicy{DataPlaneChecks: tc.spec})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if (tc.spec != nil && tc.spec.MigrationProbe != nil) != (p.Checks.Probe != nil) {
					t.Fatalf("probe %+v", p.Checks.Probe)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// created renders the Decision's migration to create: name, direction and
// the hostname it is pinned to.
func created(d Decision) string {
	m := d.CreateMigration
	if m == nil {
		return ""
	}
	host := m.Spec.AddedNodeSelector["kubernetes.io/hostname"]
	if host == "" {
		host = "-"
	}
	return m.Name + " " + m.Annotations[ProbeDirectionAnnotation] + " " + host
}
