package rollout

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// canary keeps the DaemonSet OnDelete, starts the canary by deleting the old pod
// on each canary node, and moves on once every canary pod has baked.
func (pl *planner) canary() Phase {
	pl.d.UpdateStrategy = OnDelete()
	st, v, target := &pl.st, pl.v, pl.obs.Target
	st.CanaryNodes = pl.keepAvailableCanaries(st.CanaryNodes)
	if len(st.CanaryNodes) < pl.p.CanarySize {
		st.CanaryNodes = append(st.CanaryNodes, v.pickCanaries(pl.p.CanarySize, target, st.CanaryNodes...)...)
	}
	if pl.p.Checks.Any() {
		pl.startChecks()
		pl.watchCanaryVMIs()
		if vmi, why := pl.judgeWatched(); why != "" {
			return pl.failCheck(CheckCanaryVMIs, vmi, why)
		}
	}
	if len(st.CanaryNodes) == 0 {
		st.Message = "no node runs a virt-handler pod to use as canary"
		if v.old == 0 && v.terminating == 0 {
			return PhaseWaiting
		}
		return PhaseCanary
	}
	ds := pl.obs.DaemonSet
	canDelete := v.observed && metadata.IsUpToDate(&ds.Spec.Template, target) &&
		ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType && !pl.obs.Paused
	st.CanaryPods = nil
	var waiting []string
	var bakeStart time.Time
	ready, held := 0, 0
	for _, node := range st.CanaryNodes {
		pod := v.byNode[node]
		switch {
		case pod == nil:
			waiting = append(waiting, "pod on "+node+" to be created")
			continue
		case !metadata.PodIsUpToDate(pod, target) && pl.h.held[node].Node != "":
			w := pl.waitingFor(node)
			held++
			waiting = append(waiting, fmt.Sprintf("migration %s to finish (at most until %s) before old pod %s on %s is replaced",
				w.Migration, w.Until.UTC().Format(time.RFC3339), pod.Name, node))
			continue
		case !metadata.PodIsUpToDate(pod, target):
			if canDelete && !v.terminatingOn[node] {
				pl.d.DeletePods = append(pl.d.DeletePods, pod.Name)
				pl.expiredNote(node)
			}
			waiting = append(waiting, "old pod "+pod.Name+" on "+node+" to be replaced")
			continue
		}
		st.CanaryPods = append(st.CanaryPods, pod.Name)
		if !metadata.PodIsReady(pod) {
			waiting = append(waiting, "canary pod "+pod.Name+" on "+node+" to be ready")
			continue
		}
		ready++
		since := readySince(pod)
		if since.IsZero() {
			since = pl.prev.BakedSince
		}
		if since.IsZero() {
			since = pl.obs.Now
		}
		if since.After(bakeStart) {
			bakeStart = since
		}
	}
	if ready < len(st.CanaryNodes) {
		pl.onlyMigrations = held > 0 && held == len(st.CanaryNodes)-ready
		st.BakedSince = time.Time{}
		st.Message = "canary on " + strings.Join(st.CanaryNodes, ",") + ": waiting for " + strings.Join(waiting, ", ")
		if pl.obs.Paused {
			st.Message = "paused; " + st.Message
		}
		return PhaseCanary
	}
	st.BakedSince = bakeStart
	baked := pl.obs.Now.Sub(bakeStart)
	if baked < pl.p.BakeTime {
		pl.d.RequeueAfter = pl.p.BakeTime - baked
		st.Message = fmt.Sprintf("canary %s on %s ready, baking %s of %s",
			strings.Join(st.CanaryPods, ","), strings.Join(st.CanaryNodes, ","),
			baked.Round(time.Second), pl.p.BakeTime)
		if pl.p.Checks.CanaryVMIs {
			pl.recheckIn(checkRecheck)
			st.Message += fmt.Sprintf("; %d VMIs on it must stay Running", len(st.Checks.Watched))
		}
		return PhaseCanary
	}
	st.Message = fmt.Sprintf("canary %s on %s ready for %s with no restart",
		strings.Join(st.CanaryPods, ","), strings.Join(st.CanaryNodes, ","), baked.Round(time.Second))
	if pl.obs.Paused {
		st.Message = "paused; " + st.Message + ": the rollout widens once resumed"
		return PhaseCanary
	}
	if pl.p.Checks.Any() {
		return PhaseVerifying
	}
	return PhaseIncreasing
}

// keepAvailableCanaries drops the canary nodes that went away or stopped being
// Ready before their pod proved itself (updated and Ready), so another node is
// picked instead of waiting for that one forever.
func (pl *planner) keepAvailableCanaries(nodes []string) []string {
	var kept []string
	for _, node := range nodes {
		pod := pl.v.byNode[node]
		proven := pod != nil && metadata.PodIsUpToDate(pod, pl.obs.Target) && metadata.PodIsReady(pod)
		if pl.v.available(node) || proven {
			kept = append(kept, node)
		}
	}
	return kept
}

// CanaryCandidates are the nodes a rollout to obs.Target would start its
// canary on, as the canary phase picks them (for `virt-operator plan`).
func CanaryCandidates(obs Observation, size int) []string {
	return newView(obs).pickCanaries(size, obs.Target)
}
