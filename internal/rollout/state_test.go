package rollout

import (
	"slices"
	"testing"
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
