package workloadupdate_test

import (
	"testing"

	"github.com/virt-operator/virt-operator/internal/rollout"
	"github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// The compact migration keeps the probe's direction under the name the
// rollout writes it.
func TestProbeDirectionAnnotationIsTheRollouts(t *testing.T) {
	if workloadupdate.ProbeDirectionAnnotation != rollout.ProbeDirectionAnnotation {
		t.Fatalf("%q, the rollout writes %q", workloadupdate.ProbeDirectionAnnotation, rollout.ProbeDirectionAnnotation)
	}
}
