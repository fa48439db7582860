package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	apiv1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

// CheckPreview is what one data-plane check would do after the canary's bake
// (virt-operator plan).
type CheckPreview struct {
	Name CheckName
	// Plan says what it would do, or why it could not.
	Plan string
	// VMI is the VMI the probe would move (namespace/name); "" otherwise.
	VMI string
	// Timeout bounds the probe's migrations, from the first one's creation
	// (0 for the other checks, which run through the bake and the probe).
	Timeout time.Duration
	// Moves is how many live migrations the probe would make (0 when it
	// would make none).
	Moves int
}

// PreviewChecks says what the checks p asks for would do with a canary on
// canaryNodes, over the cluster as dp shows it and with migrations running,
// as the Verifying phase would decide if the bake ended now; nil without
// checks or canary nodes.
func PreviewChecks(p Policy, canaryNodes []string, dp DataPlane, migrations []Migration) []CheckPreview {
	if !p.Checks.Any() || len(canaryNodes) == 0 {
		return nil
	}
	nodes := slices.Sorted(slices.Values(canaryNodes))
	on := strings.Join(nodes, ", ")
	var out []CheckPreview
	if p.Checks.CanaryVMIs {
		n := 0
		for i := range dp.VMIs {
			if v := &dp.VMIs[i]; v.Status.Phase == apiv1.VMIRunning && slices.Contains(nodes, v.Status.NodeName) {
				n++
			}
		}
		plan := fmt.Sprintf("the %d VMIs running on %s must stay Running through the bake and the checks", n, on)
		if n == 0 {
			plan = "no VMI runs on " + on + " now; those running there when the canary begins must stay Running through the bake and the checks"
		}
		out = append(out, CheckPreview{Name: CheckCanaryVMIs, Plan: plan})
	}
	if p.Checks.CanaryPod {
		out = append(out, CheckPreview{Name: CheckCanaryPod,
			Plan: "the canary pod must stay Ready with no restart, and " + on + " not be marked " + metadata.SchedulableLabel + "=false"})
	}
	if pp := p.Checks.Probe; pp != nil {
		w := newProbeWorld(pp, "", nodes[0], &dp, migrations, time.Time{})
		pv := CheckPreview{Name: CheckMigrationProbe, Timeout: pp.Timeout}
		ps, wait, none := w.choose()
		switch {
		case ps != nil:
			pv.VMI, pv.Moves = ps.VMI(), len(ps.Moves)
			pv.Plan = fmt.Sprintf("moves VMI %s %s (%d live migrations, one at a time), within %s of the first",
				ps.VMI(), sequenceText(ps.Moves, ps.Node), len(ps.Moves), pp.Timeout)
		case wait != "":
			pv.Plan = "would wait: " + wait
		case pp.PassWhenNoneEligible:
			pv.Plan = none + ": would pass without a migration (whenNoneEligible: Pass)"
		default:
			pv.Plan = none + ": would hold the rollout until one can be moved (whenNoneEligible: Hold)"
		}
		out = append(out, pv)
	}
	return out
}
