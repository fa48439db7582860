package upgradeplan

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// VMIPlan is what the acting workload updater would do with the running VMIs
// once the planned deployment is in place.
type VMIPlan struct {
	Actor v1.WorkloadUpdateActor
	// Migrate, Evict and Leave name the VMIs (namespace/name) by what happens.
	Migrate, Evict, Leave []string
	// BusiestNode holds the most VMIs to migrate (this operator's updater sends
	// one per node at a time by default, so it bounds the drain).
	BusiestNode      string
	BusiestNodeCount int
}

// planVMIs classifies the VMIs against the planned launcher image.
func planVMIs(in Input) VMIPlan {
	actor, _ := core.ActorOf(in.NewKubeVirt)
	vp := VMIPlan{Actor: actor}
	settings := core.SettingsFrom(in.NewKubeVirt)
	if actor == v1.ActorVirtController {
		settings = core.UpstreamSettings(in.NewKubeVirt)
	}
	plan := core.PlanUpdate(core.Inputs{VMIs: core.CompactVMIs(in.VMIs), TargetLauncherImage: in.NewConfig.Image(deployid.Launcher),
		Settings: settings, Now: time.Now(), Seed: 1, Explain: true})
	perNode := map[string]int{}
	for i := range in.VMIs {
		vmi := &in.VMIs[i]
		d := plan.Decisions[core.KeyOf(vmi)]
		if !d.Outdated {
			continue
		}
		name := vmi.Namespace + "/" + vmi.Name
		switch {
		case actor == v1.ActorNone:
			vp.Leave = append(vp.Leave, name)
		case d.Bucket == core.Migrate || d.Bucket == core.InFlight:
			vp.Migrate = append(vp.Migrate, name)
			perNode[vmi.Status.NodeName]++
		case d.Bucket == core.Evict:
			vp.Evict = append(vp.Evict, name)
		default:
			vp.Leave = append(vp.Leave, name)
		}
	}
	for n, c := range perNode {
		if c > vp.BusiestNodeCount || (c == vp.BusiestNodeCount && n < vp.BusiestNode) {
			vp.BusiestNode, vp.BusiestNodeCount = n, c
		}
	}
	for _, l := range [][]string{vp.Migrate, vp.Evict, vp.Leave} {
		sort.Strings(l)
	}
	return vp
}

// maxNamed is how many VMIs of each kind the text names.
const maxNamed = 10

func (vp VMIPlan) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "VMIs, moved by %s: %d migrate, %d evicted (restarted), %d left\n", vp.Actor, len(vp.Migrate), len(vp.Evict), len(vp.Leave))
	for _, g := range []struct {
		what  string
		names []string
	}{{"migrate", vp.Migrate}, {"evict", vp.Evict}, {"left", vp.Leave}} {
		if len(g.names) == 0 {
			continue
		}
		shown := g.names[:min(maxNamed, len(g.names))]
		more := ""
		if len(g.names) > maxNamed {
			more = fmt.Sprintf(" and %d more", len(g.names)-maxNamed)
		}
		fmt.Fprintf(&b, "  %-8s %s%s\n", g.what, strings.Join(shown, " "), more)
	}
	if vp.BusiestNodeCount > 0 {
		fmt.Fprintf(&b, "  the busiest node, %s, holds %d of the VMIs to migrate\n", vp.BusiestNode, vp.BusiestNodeCount)
	}
	return b.String()
}
