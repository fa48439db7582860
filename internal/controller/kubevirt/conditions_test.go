package kubevirt

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/rollout"
)

func statuses(conds []v1.KubeVirtCondition) map[v1.KubeVirtConditionType]corev1.ConditionStatus {
	out := map[v1.KubeVirtConditionType]corev1.ConditionStatus{}
	for _, c := range conds {
		out[c.Type] = c.Status
	}
	return out
}

func TestConditionsFollowUpstreamSequences(t *testing.T) {
	now := metav1.NewTime(time.Unix(1000, 0))
	const T, F = corev1.ConditionTrue, corev1.ConditionFalse
	cases := []struct {
		name  string
		state State
		want  map[v1.KubeVirtConditionType]corev1.ConditionStatus
	}{
		{"fresh install, not ready", State{Kind: StateDeploying},
			map[v1.KubeVirtConditionType]corev1.ConditionStatus{"Available": F, "Progressing": T, "Degraded": F}},
		{"steady state", State{Kind: StateAvailable, Created: true},
			map[v1.KubeVirtConditionType]corev1.ConditionStatus{"Available": T, "Progressing": F, "Degraded": F, "Created": T}},
		{"upgrade in flight", State{Kind: StateUpdating},
			map[v1.KubeVirtConditionType]corev1.ConditionStatus{"Available": T, "Progressing": T, "Degraded": T}},
		{"deleting", State{Kind: StateDeleting, Created: true},
			map[v1.KubeVirtConditionType]corev1.ConditionStatus{"Available": F, "Progressing": F, "Degraded": T}},
		{"second CR ignored", State{Kind: StateIgnored, Reason: ReasonExistingDeployment, Message: "m"},
			map[v1.KubeVirtConditionType]corev1.ConditionStatus{"Synchronized": F}},
		{"failure before anything was available", State{Kind: StateFailed, Reason: ReasonInvalidCustomization, Message: "m"},
			map[v1.KubeVirtConditionType]corev1.ConditionStatus{"Available": F, "Progressing": F, "Degraded": T, "Synchronized": F}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := statuses(Conditions(nil, c.state, now))
			if len(got) != len(c.want) {
				t.Fatalf("conditions %v, want %v", got, c.want)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Fatalf("%s = %s, want %s (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}

func TestFailedUpgradeKeepsAvailable(t *testing.T) {
	now := metav1.NewTime(time.Unix(1000, 0))
	conds := Conditions(nil, State{Kind: StateAvailable, Created: true}, now)
	conds = Conditions(conds, State{Kind: StateFailed, Reason: ReasonInvalidCustomization, Message: "patch virt-api"}, now)
	if got := statuses(conds)["Available"]; got != corev1.ConditionTrue {
		t.Fatalf("Available = %s after a failed change; the previous version still runs", got)
	}
	if d := findCondition(conds, v1.KubeVirtConditionDegraded); d.Reason != ReasonInvalidCustomization || d.Message != "patch virt-api" {
		t.Fatalf("Degraded does not say why: %+v", d)
	}
}

func TestConditionTimestampsMoveOnlyOnStatusChange(t *testing.T) {
	t0, t1 := metav1.NewTime(time.Unix(1000, 0)), metav1.NewTime(time.Unix(2000, 0))
	conds := Conditions(nil, State{Kind: StateDeploying, TargetVersion: "v1"}, t0)
	conds = Conditions(conds, State{Kind: StateDeploying, TargetVersion: "v2"}, t1)
	for _, c := range conds {
		if !c.LastTransitionTime.Equal(&t0) {
			t.Fatalf("%s moved its transition time without a status change", c.Type)
		}
	}
	conds = Conditions(conds, State{Kind: StateAvailable}, t1)
	if a := findCondition(conds, v1.KubeVirtConditionAvailable); !a.LastTransitionTime.Equal(&t1) {
		t.Fatalf("Available changed status but kept its old transition time")
	}
}

func TestHandlerProblemKeepsTheCrashMessage(t *testing.T) {
	crash := rollout.Decision{Phase: rollout.PhaseFailed, Event: &rollout.Event{Reason: rollout.ReasonFailedUpdate, Message: "pod virt-handler-x on node node-1 crashed"}}
	reason, msg := handlerProblem(crash, nil)
	if reason != ReasonHandlerRolloutFailed || msg != crash.Event.Message {
		t.Fatalf("failure: %q %q", reason, msg)
	}
	conds := Conditions(nil, State{Kind: StateFailed, Reason: reason, Message: msg}, metav1.Now())
	rollingBack := rollout.Decision{Phase: rollout.PhaseFailed, Status: &v1.HandlerRolloutStatus{Message: "waiting for old pod to be replaced"}}
	if _, later := handlerProblem(rollingBack, conds); later != msg {
		t.Fatalf("the rollback's progress replaced the crash message: %q", later)
	}
	if reason, _ := handlerProblem(rollout.Decision{Phase: rollout.PhaseWaiting}, nil); reason != "" {
		t.Fatalf("a healthy phase gave reason %q", reason)
	}
}
