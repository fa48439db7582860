package install_test

import (
	"context"
	"testing"
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
	"github.com/virt-operator/virt-operator/internal/sandbox/vmsim"
)

// BenchmarkWorkloadUpdate1000 times the workload update of 1000 outdated
// live-migratable VMIs on 20 nodes, each simulated migration taking T, one out of
// each node at a time (the default pacing): from the moment the upgrade is done
// (observed == target) until the outdated count is 0, next to the bound set by
// the busiest node, its VMI count × T, and next to the floor: the same VMIs
// migrated once before the upgrade by a minimal driver (drainFloor), each per
// VMI of its busiest node. Target: floor-ratio ≤ 1.15.
func BenchmarkWorkloadUpdate1000(b *testing.B) {
	const (
		vms = 1000
		T   = time.Second
	)
	for range b.N {
		e := startEnv(b, 20, sandboxtest.WithMigrationDuration(T))
		e.createKubeVirt(v1.KubeVirtSpec{
			WorkloadUpdates: &v1.WorkloadUpdatePolicy{
				Methods: []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate},
			},
			HandlerRollout: &v1.HandlerRolloutPolicy{BakeTime: &v1.Duration{Duration: time.Second}},
		})
		oldImage := launcherImage(e.waitAvailable(3 * time.Minute))
		vc, err := vmsim.NewClient(e.sb.RESTConfig())
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		names, err := vmsim.CreateVMs(ctx, vc, vmsim.CreateOptions{Namespace: vmNamespace, Count: vms})
		if err == nil {
			err = vmsim.WaitRunning(ctx, vc, vmNamespace, names, oldImage)
		}
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		e.eventually("1000 VMIs counted up to date", time.Minute, func() (bool, error) { return outdated(e.kubeVirt()) == 0, nil })

		floor, floorBusiest := e.drainFloor(b)
		migs := e.followMigrations()
		nodeOf, busiest := e.vmiNodes()
		migs.setNodes(nodeOf)
		e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0" })
		poll := func(what string, cond func(*v1.KubeVirt) bool) time.Time {
			deadline := time.Now().Add(15 * time.Minute)
			for time.Now().Before(deadline) {
				if cond(e.kubeVirt()) {
					return time.Now()
				}
				time.Sleep(50 * time.Millisecond)
			}
			b.Fatalf("timed out waiting for %s", what)
			return time.Time{}
		}
		gateOpen := poll("the upgrade done", func(kv *v1.KubeVirt) bool {
			return kv.Status.Phase == v1.KubeVirtPhaseDeployed && kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID &&
				launcherImage(kv) != oldImage
		})
		drained := poll("outdated count 0", func(kv *v1.KubeVirt) bool { return outdated(kv) == 0 })
		wall := drained.Sub(gateOpen)
		bound := time.Duration(busiest) * T
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(bound.Seconds(), "bound-s")
		b.ReportMetric(wall.Seconds()/bound.Seconds(), "ratio")
		b.ReportMetric(floor.Seconds(), "floor-s")
		b.ReportMetric(drainFloorRatio(wall, busiest, floor, floorBusiest), "floor-ratio")
		run, react := migs.timing()
		b.ReportMetric(float64(run.Milliseconds()), "migration-ms")
		b.ReportMetric(float64(react.Milliseconds()), "reaction-ms")
		b.ReportMetric(float64(migs.maxParallel), "max-parallel")
		b.ReportMetric(float64(migs.perNodeMax()), "max-per-node")
		b.ReportMetric(float64(busiest), "busiest-node-vmis")
		e.stopOperator()
	}
}
