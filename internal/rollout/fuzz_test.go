package rollout

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	apiv1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

var fuzzPhases = []Phase{"", PhaseStarted, PhaseCanary, PhaseVerifying, PhaseIncreasing, PhaseWaiting, PhaseSuccessful, PhaseFailed, "Bogus"}

// FuzzPlan: Plan never panics, and what it asks for stays within bounds.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{3, 1, 2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, uint8(2), uint8(1), false, true, int64(30))
	f.Add([]byte{0xff, 0x10, 0x22, 0x7f}, uint8(3), uint8(0), true, false, int64(-5))
	f.Fuzz(func(t *testing.T, podBytes []byte, phase, strategyBits uint8, specChanged, genUnknown bool, secs int64) {
		strategies := []*appsv1.DaemonSetUpdateStrategy{Default(), OnDelete(), fast(), {Type: appsv1.RollingUpdateDaemonSetStrategyType}, {}}
		ds := daemonSet([]metadata.Target{oldTgt, newTgt}[strategyBits&1], strategies[int(strategyBits>>1)%len(strategies)], int32(len(podBytes)%7))
		if strategyBits&0x40 != 0 {
			ds.Generation++
		}
		var ps []corev1.Pod
		var migs []Migration
		for i, b := range podBytes {
			if b&0x80 != 0 { // a migration from this pod's node, to the next one's
				m := mig(fmt.Sprintf("m%d", i), fmt.Sprintf("node-%d", int(b>>5)), "", at(int(b)-200))
				if i+1 < len(podBytes) {
					m.TargetNode = fmt.Sprintf("node-%d", int(podBytes[i+1]>>5))
				}
				migs = append(migs, m)
			}
			tgt := []metadata.Target{oldTgt, newTgt}[b&1]
			p := pod(fmt.Sprintf("node-%d", int(b>>5)), tgt, at(int(b>>3)), createdAt(at(int(b&7)-4)))
			p.Name = fmt.Sprintf("p%d", i)
			if b&2 != 0 {
				notReady(&p)
			}
			if b&4 != 0 {
				restarted(int32(b >> 6))(&p)
			}
			if b&8 != 0 {
				terminating(&p)
			}
			if b&16 != 0 {
				p.Status.ContainerStatuses = nil
			}
			ps = append(ps, p)
		}
		var prev *State
		if ph := fuzzPhases[int(phase)%len(fuzzPhases)]; ph != "" {
			prev = &State{Phase: ph, TargetID: []string{"", newTgt.ID, "x"}[int(phase>>3)%3],
				CanaryNodes: []string{"node-0", "node-9"}[:int(phase>>5)%3], StartedAt: at(int(secs % 50)),
				PhaseChangeAt: at(int(secs % 900)), BakedSince: at(int(secs % 13))}
		}
		p := DefaultPolicy()
		p.CanarySize = 1 + int(phase>>6)
		p.FastStep = intstr.FromInt32(1 + int32(strategyBits>>4))
		p.BakeTime = time.Duration(secs%20) * time.Second
		if p.BakeTime < 0 {
			p.BakeTime = 0
		}
		p.MaxMigrationWait = time.Duration(max(secs%600, 0)) * time.Second
		obs := Observation{DaemonSet: ds, Pods: ps, Target: newTgt, Previous: prev, SpecChanged: specChanged,
			GenerationUnknown: genUnknown, Migrations: migs, Now: at(int(secs % 1000))}
		if strategyBits&0x80 != 0 { // the data-plane checks, over VMIs on the pods' nodes
			p.Checks = DataPlaneChecks{CanaryVMIs: true, CanaryPod: secs%2 == 0, Probe: probeOn("app=probe").Probe}
			dp := &DataPlane{Nodes: threeNodes()}
			for i, b := range podBytes {
				v := vmi(fmt.Sprintf("v%d", i), fmt.Sprintf("node-%d", int(b>>5)))
				if b&0x40 != 0 {
					v.Status.Phase = apiv1.VMIFailed
				}
				dp.VMIs = append(dp.VMIs, v)
			}
			obs.DataPlane = dp
		}
		d, err := Plan(obs, p)
		if err != nil {
			return
		}
		if d.CreateMigration != nil && d.Phase != PhaseVerifying {
			t.Fatalf("a probe migration created in phase %s", d.Phase)
		}
		if (d.Phase == PhaseStarted || d.Phase == PhaseCanary) && len(d.DeletePods) > p.CanarySize {
			t.Fatalf("deletes %v with canary size %d", d.DeletePods, p.CanarySize)
		}
		held := holdsOf(migs, p.MaxMigrationWait, obs.Now).held
		for _, name := range d.DeletePods {
			for _, pod := range ps {
				if pod.Name == name && (pod.DeletionTimestamp != nil || metadata.PodIsUpToDate(&pod, newTgt)) {
					t.Fatalf("deletes %s, which is terminating or updated", name)
				}
				if _, ok := held[pod.Spec.NodeName]; ok && pod.Name == name {
					t.Fatalf("deletes %s on %s, which a migration holds", name, pod.Spec.NodeName)
				}
			}
		}
		if d.Phase == PhaseFailed && !d.Rollback {
			t.Fatal("failed without rollback")
		}
		if d.Event != nil && prev != nil && prev.Phase == d.Phase && prev.TargetID == newTgt.ID && !specChanged {
			t.Fatalf("event %+v without a phase change", d.Event)
		}
		if d.Phase != "" && (d.Status == nil || d.Status.Phase != string(d.Phase)) {
			t.Fatalf("status %+v for phase %s", d.Status, d.Phase)
		}
		if d.RequeueAfter < 0 {
			t.Fatalf("requeue %s", d.RequeueAfter)
		}
	})
}
