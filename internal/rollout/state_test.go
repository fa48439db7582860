package rollout

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestStateFromStatusRoundTrip(t *testing.T) {
	st := State{Phase: PhaseCanary, TargetID: "new", CanaryNodes: []string{"a", "b"}, CanaryPods: []string{"p", "q"},
		StartedAt: at(1), PhaseChangeAt: at(2), Message: "m"}
	pl := &planner{}
	back := StateFromStatus(pl.status(st), "new")
	if back.Phase != st.Phase || back.TargetID != "new" || !slices.Equal(back.CanaryNodes, st.CanaryNodes) ||
		!slices.Equal(back.CanaryPods, st.CanaryPods) || !back.StartedAt.Equal(st.StartedAt) ||
		!back.PhaseChangeAt.Equal(st.PhaseChangeAt) || back.Message != "m" {
		t.Errorf("round trip: %+v", back)
	}
	if StateFromStatus(nil, "x") != nil || pl.status(State{}) != nil {
		t.Error("no status, no state")
	}
}

func TestStrategies(t *testing.T) {
	if !IsDefault(*Default()) || IsDefault(*fast()) || IsDefault(*OnDelete()) {
		t.Error("IsDefault")
	}
	unset := *Default()
	unset.RollingUpdate = nil
	if IsDefault(unset) || SameStrategy(unset, *Default()) || !SameStrategy(*OnDelete(), *OnDelete()) {
		t.Error("an unset rollingUpdate is not maxUnavailable 1")
	}
	if got := StrategyString(*fast()); got != "maxUnavailable 10%" {
		t.Error(got)
	}
}

func TestIdleWithoutStateWritesNoStatus(t *testing.T) {
	d, err := Plan(Observation{DaemonSet: daemonSet(newTgt, Default(), 2), Pods: pods(newTgt, 0, 2), Target: newTgt, Now: t0}, DefaultPolicy())
	if err != nil || !d.Done || d.Status != nil || d.Event != nil || d.Phase != "" {
		t.Errorf("%+v %v", d, err)
	}
}

// A Pending pod (no node yet) is never a canary, and a NotReady old pod only
// when too few are Ready; a pod already on the target is kept (a resumed canary).
func TestPickCanaries(t *testing.T) {
	pending := pod("", oldTgt, t0)
	pending.Name = "virt-handler-pending"
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		n    int
		want []string
	}{
		{"node-name order", pods(oldTgt, 0, 3), 1, []string{"node-0"}},
		{"a pending pod never", []corev1.Pod{pending, pod("node-5", oldTgt, t0)}, 1, []string{"node-5"}},
		{"only a pending pod: none", []corev1.Pod{pending}, 1, nil},
		{"a NotReady node after the Ready ones", []corev1.Pod{pod("node-0", oldTgt, t0, notReady), pod("node-1", oldTgt, t0)}, 1, []string{"node-1"}},
		{"NotReady when too few are Ready", []corev1.Pod{pod("node-0", oldTgt, t0, notReady), pod("node-1", oldTgt, t0)}, 2, []string{"node-1", "node-0"}},
		{"a resumed canary first, Ready or not", []corev1.Pod{pod("node-0", oldTgt, t0), pod("node-9", newTgt, t0, notReady)}, 1, []string{"node-9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newView(Observation{DaemonSet: daemonSet(newTgt, OnDelete(), int32(len(tc.pods))), Pods: tc.pods, Target: newTgt})
			if got := v.pickCanaries(tc.n, newTgt); !slices.Equal(got, tc.want) {
				t.Fatalf("picked %v, want %v", got, tc.want)
			}
		})
	}
}
