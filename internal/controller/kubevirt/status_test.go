package kubevirt

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/uninstall"
	"github.com/virt-operator/virt-operator/internal/deployid"
)

// statusCase is a pass's scope on top of a previous status, and what the
// next status must say.
type statusCase struct {
	name  string
	prev  v1.KubeVirtStatus
	scope func(s *scope)
	// want: phase, and the Available/Progressing/Degraded statuses with
	// Degraded's reason ("" for any).
	phase                           v1.KubeVirtPhase
	available, progressing, degrade corev1.ConditionStatus
	reason                          string
	check                           func(t *testing.T, next v1.KubeVirtStatus)
}

var (
	statusT0   = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	oldCfg     = &deployid.Config{ID: "old", KubeVirtVersion: "v1.8.4", Registry: "quay.io/kubevirt"}
	newCfg     = &deployid.Config{ID: "new", KubeVirtVersion: "v1.9.0", Registry: "quay.io/kubevirt"}
	deployedV1 = func() v1.KubeVirtStatus {
		st := v1.KubeVirtStatus{Phase: v1.KubeVirtPhaseDeployed}
		setTarget(&st, oldCfg)
		setObserved(&st, oldCfg)
		st.Conditions = Conditions(nil, State{Kind: StateAvailable, Created: true}, metav1.NewTime(statusT0.Add(-time.Hour)))
		return st
	}
)

func TestNextStatus(t *testing.T) {
	const f, tr = corev1.ConditionFalse, corev1.ConditionTrue
	for _, tc := range []statusCase{{
		name:  "installing: the strategy is being generated",
		scope: func(s *scope) { s.cfg, s.objects = newCfg, &objectsResult{} },
		phase: v1.KubeVirtPhaseDeploying, available: f, progressing: tr, degrade: f,
		check: func(t *testing.T, next v1.KubeVirtStatus) {
			if next.TargetDeploymentID != "new" || next.ObservedDeploymentID != "" || next.OperatorVersion != "op" {
				t.Errorf("target %q observed %q operator %q", next.TargetDeploymentID, next.ObservedDeploymentID, next.OperatorVersion)
			}
		},
	}, {
		name:  "installing: prerequisites written",
		scope: func(s *scope) { s.cfg, s.target, s.objects = newCfg, &deployment{}, &objectsResult{created: true} },
		phase: v1.KubeVirtPhaseDeploying, available: f, progressing: tr, degrade: f,
		check: func(t *testing.T, next v1.KubeVirtStatus) {
			if c := findCondition(next.Conditions, v1.KubeVirtConditionCreated); c == nil || c.Status != tr {
				t.Errorf("Created %+v", c)
			}
		},
	}, {
		name: "an upgrade held by spec.paused, before virt-handler",
		prev: deployedV1(),
		scope: func(s *scope) {
			s.cfg, s.target, s.objects = newCfg, &deployment{}, &objectsResult{created: true}
			s.hold = &holdResult{reason: ReasonRolloutPaused, message: "spec.paused is true", step: "virt-handler"}
		},
		phase: v1.KubeVirtPhaseDeployed, available: tr, progressing: tr, degrade: tr, reason: ReasonRolloutPaused,
		check: func(t *testing.T, next v1.KubeVirtStatus) {
			p := findCondition(next.Conditions, v1.KubeVirtConditionProgressing)
			if next.RolloutHold == nil || !strings.HasPrefix(p.Message, "held before virt-handler: spec.paused") {
				t.Errorf("hold %+v, Progressing %q", next.RolloutHold, p.Message)
			}
		},
	}, {
		name: "preflight blocked",
		prev: deployedV1(),
		scope: func(s *scope) {
			s.cfg, s.target, s.objects = newCfg, &deployment{}, &objectsResult{created: true}
			s.preflight = &preflightResult{targetID: "new", reason: "ImagePullFailed", message: "no such tag"}
			s.hold = preflightHold("no such tag")
			s.hold.step = "prerequisites"
		},
		phase: v1.KubeVirtPhaseDeployed, available: tr, progressing: tr, degrade: tr, reason: ReasonPreflight,
		check: func(t *testing.T, next v1.KubeVirtStatus) {
			u := findCondition(next.Conditions, v1.KubeVirtConditionUpgradeable)
			if u == nil || u.Status != f || u.Reason != "ImagePullFailed" || next.Preflight == nil {
				t.Errorf("Upgradeable %+v, preflight %+v", u, next.Preflight)
			}
		},
	}, {
		name: "the strategy Job failing: Degraded names it, the old version stays Available",
		prev: deployedV1(),
		scope: func(s *scope) {
			s.cfg = newCfg
			s.fail(problem{Reason: ReasonStrategyJobFailed, Message: "The install-strategy Job failed and is retried: ImagePullBackOff", Warning: ReasonStrategyJobFailed})
		},
		phase: v1.KubeVirtPhaseDeployed, available: tr, progressing: f, degrade: tr, reason: ReasonStrategyJobFailed,
	}, {
		name: "the first problem wins over a later one",
		prev: deployedV1(),
		scope: func(s *scope) {
			s.cfg = newCfg
			s.fail(problem{Reason: ReasonInvalidCustomization, Message: "patch"})
			s.fail(problem{Reason: ReasonDeploymentFailed, Message: "later"})
		},
		phase: v1.KubeVirtPhaseDeployed, available: tr, progressing: f, degrade: tr, reason: ReasonInvalidCustomization,
	}, {
		name: "a problem with the stale strategy in use, rolled over: Degraded stays, observed moves",
		prev: deployedV1(),
		scope: func(s *scope) {
			s.cfg, s.target, s.objects = newCfg, &deployment{}, &objectsResult{created: true, rolledOver: true}
			s.fail(problem{Reason: ReasonStrategyJobFailed, Message: "regenerating for monitoring failed", Warning: ReasonStrategyJobFailed})
		},
		phase: v1.KubeVirtPhaseDeployed, available: tr, progressing: f, degrade: tr, reason: ReasonStrategyJobFailed,
		check: func(t *testing.T, next v1.KubeVirtStatus) {
			if next.ObservedDeploymentID != "new" {
				t.Errorf("observed %q", next.ObservedDeploymentID)
			}
		},
	}, {
		name: "rolled over",
		prev: deployedV1(),
		scope: func(s *scope) {
			s.cfg, s.target, s.objects = newCfg, &deployment{}, &objectsResult{created: true, rolledOver: true}
		},
		phase: v1.KubeVirtPhaseDeployed, available: tr, progressing: f, degrade: f,
		check: func(t *testing.T, next v1.KubeVirtStatus) {
			if next.ObservedDeploymentID != "new" || next.ObservedKubeVirtVersion != "v1.9.0" || next.RolloutHold != nil ||
				next.ObservedGeneration == nil || *next.ObservedGeneration != 3 {
				t.Errorf("observed %q %q, hold %+v, observedGeneration %v", next.ObservedDeploymentID, next.ObservedKubeVirtVersion, next.RolloutHold, next.ObservedGeneration)
			}
		},
	}, {
		name: "taking over another operator's deployment of the same release: available, not degraded",
		prev: func() v1.KubeVirtStatus {
			st := deployedV1()
			st.TargetDeploymentID, st.ObservedDeploymentID = "upstreams", "upstreams"
			st.TargetDeploymentConfig, st.ObservedDeploymentConfig = `{"id":"upstreams"}`, `{"id":"upstreams"}`
			return st
		}(),
		scope: func(s *scope) {
			s.cfg, s.target = &deployid.Config{ID: "ours", KubeVirtVersion: "v1.8.4", Registry: "quay.io/kubevirt"}, &deployment{}
			s.objects = &objectsResult{created: true}
			s.takeover = observeTakeover(s.kv.Status)
		},
		phase: v1.KubeVirtPhaseDeployed, available: tr, progressing: tr, degrade: f,
		check: func(t *testing.T, next v1.KubeVirtStatus) {
			p := findCondition(next.Conditions, v1.KubeVirtConditionProgressing)
			if p.Reason != ReasonTakingOver || !strings.Contains(p.Message, "deployment upstreams of another operator") {
				t.Errorf("Progressing %+v", p)
			}
		},
	}, {
		name: "at rest, a pass stopped by a transient error within its grace concludes nothing: the conditions stay",
		prev: deployedV1(),
		scope: func(s *scope) {
			s.cfg = oldCfg
		},
		phase: v1.KubeVirtPhaseDeployed, available: tr, progressing: f, degrade: f,
		check: func(t *testing.T, next v1.KubeVirtStatus) {
			for _, want := range deployedV1().Conditions {
				if got := findCondition(next.Conditions, want.Type); got == nil || *got != want {
					t.Errorf("condition %s changed: %+v, was %+v", want.Type, got, want)
				}
			}
		},
	}, {
		name: "a rollout held, then a pass stopped before the hold phase: the hold stays recorded",
		prev: func() v1.KubeVirtStatus {
			st := deployedV1()
			st.RolloutHold = &v1.RolloutHoldStatus{Reason: ReasonRolloutPaused, Message: "spec.paused is true", Step: "virt-handler"}
			return st
		}(),
		scope: func(s *scope) { s.cfg = newCfg },
		phase: v1.KubeVirtPhaseDeployed, available: tr, progressing: f, degrade: f,
		check: func(t *testing.T, next v1.KubeVirtStatus) {
			if next.RolloutHold == nil || next.RolloutHold.Reason != ReasonRolloutPaused {
				t.Errorf("rolloutHold %+v: a pass that did not reach the hold phase cleared it", next.RolloutHold)
			}
		},
	}, {
		name:  "deleting",
		prev:  deployedV1(),
		scope: func(s *scope) { s.deletion = &uninstall.Result{Remaining: "waiting for 3 objects"} },
		phase: v1.KubeVirtPhaseDeleting, available: f, progressing: f, degrade: tr, reason: ReasonDeleting,
	}, {
		name:  "an uninstall held by workloads",
		prev:  deployedV1(),
		scope: func(s *scope) { s.deletion = &uninstall.Result{Blocked: "Uninstall is held: 2 VMs exist"} },
		phase: v1.KubeVirtPhaseDeployed, available: tr, progressing: f, degrade: tr, reason: ReasonDeletionBlocked,
	}, {
		name:  "another CR is the active one",
		scope: func(s *scope) { s.ignored = "There is an active KubeVirt deployment" },
		check: func(t *testing.T, next v1.KubeVirtStatus) {
			if c := findCondition(next.Conditions, v1.KubeVirtConditionSynchronized); c == nil || c.Reason != ReasonExistingDeployment {
				t.Errorf("Synchronized %+v", c)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scope{kv: &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Status: tc.prev}, now: statusT0}
			tc.scope(s)
			next := nextStatus(tc.prev, s, "op")
			if next.Phase != tc.phase {
				t.Errorf("phase %q, want %q", next.Phase, tc.phase)
			}
			for typ, want := range map[v1.KubeVirtConditionType]corev1.ConditionStatus{
				v1.KubeVirtConditionAvailable: tc.available, v1.KubeVirtConditionProgressing: tc.progressing, v1.KubeVirtConditionDegraded: tc.degrade,
			} {
				if c := findCondition(next.Conditions, typ); want != "" && (c == nil || c.Status != want) {
					t.Errorf("%s = %+v, want %s", typ, c, want)
				}
			}
			if d := findCondition(next.Conditions, v1.KubeVirtConditionDegraded); tc.reason != "" && (d == nil || d.Reason != tc.reason) {
				t.Errorf("Degraded %+v, want reason %s", d, tc.reason)
			}
			if ready := findCondition(next.Conditions, v1.KubeVirtConditionReady); ready == nil || ready.ObservedGeneration != 3 {
				t.Errorf("Ready %+v: the standard conditions are derived with the generation", ready)
			}
			if again := nextStatus(tc.prev, s, "op"); !equality.Semantic.DeepEqual(again, next) {
				t.Error("nextStatus is not deterministic")
			}
			if tc.check != nil {
				tc.check(t, next)
			}
		})
	}
}

// A status whose observed deployment another operator wrote (a config this
// operator would not have written) is a take-over, also once this operator
// has written its own target; this operator's own never is.
func TestObserveTakeover(t *testing.T) {
	ours := &deployid.Config{Namespace: "kubevirt", KubeVirtVersion: "v1.8.4", Registry: "quay.io/kubevirt"}
	ours.ID = ours.ComputeID()
	own := v1.KubeVirtStatus{}
	setTarget(&own, ours)
	own.ObservedDeploymentID, own.ObservedDeploymentConfig = own.TargetDeploymentID, own.TargetDeploymentConfig
	if observeTakeover(own) != nil {
		t.Fatal("this operator's own status taken for another's")
	}
	if observeTakeover(v1.KubeVirtStatus{TargetDeploymentID: ours.ID}) != nil {
		t.Fatal("a first install taken for a take-over")
	}
	theirs := deployedV1()
	theirs.ObservedDeploymentConfig = `{"id":"abc","kubeVirtVersion":"v1.8.4"}`
	for _, st := range []v1.KubeVirtStatus{theirs, func() v1.KubeVirtStatus { st := theirs; setTarget(&st, ours); return st }()} {
		got := observeTakeover(st)
		if got == nil || got.Version != "v1.8.4" || !got.sameRelease(oldCfg) || got.sameRelease(newCfg) {
			t.Fatalf("take-over %+v of %s", got, st.TargetDeploymentConfig)
		}
	}
}

// A Warning fires when its problem appears or changes, once: a pass that
// concludes the same problem again sends none, also when that pass ran on
// with a stale strategy and rolled over (the repeated-Warning case). A
// transition's Event waits for the status that records it to be written.
func TestEventsFireOncePerTransition(t *testing.T) {
	pass := func(prev v1.KubeVirtStatus) *scope {
		s := &scope{kv: &v1.KubeVirt{Status: prev}, now: statusT0, cfg: newCfg, target: &deployment{}, objects: &objectsResult{rolledOver: true, created: true}}
		s.fail(problem{Reason: ReasonStrategyJobFailed, Message: "The install-strategy Job failed and is retried: boom", Warning: ReasonStrategyJobFailed})
		return s
	}
	count := func(events []kvEvent, reason string) int {
		n := 0
		for _, e := range events {
			if e.Reason == reason {
				n++
			}
		}
		return n
	}
	prev := deployedV1()
	s := pass(prev)
	next := nextStatus(prev, s, "")
	if ev := eventsFor(prev, next, s, false); count(ev, ReasonStrategyJobFailed)+count(ev, "TargetChanged")+count(ev, "Deployed") != 0 {
		t.Fatalf("transitions announced before their status was written: %+v", ev)
	}
	first := eventsFor(prev, next, s, true)
	for _, reason := range []string{ReasonStrategyJobFailed, "TargetChanged", "Deployed"} {
		if count(first, reason) != 1 {
			t.Errorf("first pass: %d %s Events, want 1 (%+v)", count(first, reason), reason, first)
		}
	}
	for range 3 {
		s2 := pass(next)
		again := nextStatus(next, s2, "")
		if ev := eventsFor(next, again, s2, true); len(ev) != 0 {
			t.Fatalf("a pass concluding the same again sent %+v", ev)
		}
		if d := findCondition(again.Conditions, v1.KubeVirtConditionDegraded); d.Reason != ReasonStrategyJobFailed {
			t.Fatalf("Degraded was overwritten: %+v", d)
		}
		next = again
	}
	// An action Event (the phase did something) is sent whether or not the status was written.
	s3 := pass(next)
	s3.emit(eventNormal, "StrategyJobCreated", "Generate", "Generating")
	if ev := eventsFor(next, nextStatus(next, s3, ""), s3, false); count(ev, "StrategyJobCreated") != 1 {
		t.Fatalf("action Events %+v", ev)
	}
}
