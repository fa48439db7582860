package kubevirt

import (
	"strings"
	"testing"
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func TestRolloutHold(t *testing.T) {
	now := time.Date(2026, 6, 3, 12, 0, 0, 0, time.UTC) // a Wednesday
	upgrading := v1.KubeVirtStatus{ObservedDeploymentID: "old", TargetDeploymentID: "new"}
	window := func(start string) []v1.MaintenanceWindow {
		return []v1.MaintenanceWindow{{Start: start, Duration: v1.Duration{Duration: time.Hour}}}
	}
	cases := []struct {
		name    string
		spec    v1.KubeVirtSpec
		status  v1.KubeVirtStatus
		reason  string
		message string
		next    bool
	}{
		{"at rest nothing is held, paused or not", v1.KubeVirtSpec{Paused: true}, v1.KubeVirtStatus{ObservedDeploymentID: "a", TargetDeploymentID: "a"}, "", "", false},
		{"an upgrade, not paused, no windows", v1.KubeVirtSpec{}, upgrading, "", "", false},
		{"paused", v1.KubeVirtSpec{Paused: true}, upgrading, ReasonRolloutPaused, "spec.paused is true", false},
		{"a first install, paused", v1.KubeVirtSpec{Paused: true}, v1.KubeVirtStatus{TargetDeploymentID: "new"}, ReasonRolloutPaused, "spec.paused", false},
		{"inside a window", v1.KubeVirtSpec{RolloutWindows: window("11:30")}, upgrading, "", "", false},
		{"outside the windows", v1.KubeVirtSpec{RolloutWindows: window("22:00")}, upgrading, ReasonOutsideRolloutWindows, "the next opens at 2026-06-03T22:00:00Z", true},
		{"a window that cannot open", v1.KubeVirtSpec{RolloutWindows: []v1.MaintenanceWindow{{Start: "22:00", Duration: v1.Duration{Duration: time.Hour}, TimeZone: "Atlantis/Central"}}},
			upgrading, ReasonOutsideRolloutWindows, `time zone "Atlantis/Central"`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, requeue := rolloutHold(&v1.KubeVirt{Spec: c.spec, Status: c.status}, "", now)
			switch {
			case h == nil:
				t.Fatal("the hold phase concluded nothing")
			case c.reason == "" && h.held():
				t.Fatalf("held: %+v", h)
			case c.reason == "":
				return
			case h.reason != c.reason || !strings.Contains(h.message, c.message) || (h.status().NextWindowOpen != nil) != c.next:
				t.Fatalf("hold %+v, want %s with %q", h, c.reason, c.message)
			}
			if c.next {
				if d := requeue; d != 10*time.Hour {
					t.Fatalf("requeue %v, want the next opening in 10h", d)
				}
			}
		})
	}
}
