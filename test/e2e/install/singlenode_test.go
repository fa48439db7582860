package install_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
	"github.com/virt-operator/virt-operator/internal/sandbox/vmsim"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// On a one-node cluster a live migration has nowhere to go. After an upgrade
// with LiveMigrate as the only method, the updater creates no migration and
// reports the 4 VMIs not movable, with the reason, in status and in one Event
// each; once Evict is allowed too, they are evicted onto the new launcher, still
// without a migration.
func TestWorkloadUpdatesOnOneNode(t *testing.T) {
	t.Parallel()
	const vms = 4
	e := startEnv(t, 1, sandboxtest.WithMigrationDuration(500*time.Millisecond))
	e.createKubeVirt(v1.KubeVirtSpec{
		WorkloadUpdates: &v1.WorkloadUpdatePolicy{
			Methods:               []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate},
			BatchEvictionInterval: &v1.Duration{Duration: time.Second},
		},
		HandlerRollout: &v1.HandlerRolloutPolicy{BakeTime: &v1.Duration{Duration: 2 * time.Second}},
	})
	oldImage := launcherImage(e.waitAvailable(3 * time.Minute))

	vc, names := e.runVMs(vmsim.CreateOptions{Count: vms}, oldImage)

	migs := e.followMigrations()
	e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0" })
	var newImage string
	e.eventually("the 4 VMIs reported not movable after the upgrade", 5*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		if n := migs.total(); n > 0 {
			return false, fmt.Errorf("%d migrations created on a one-node cluster", n)
		}
		w := kv.Status.WorkloadUpdates
		if kv.Status.ObservedDeploymentID != kv.Status.TargetDeploymentID || w == nil || w.DeploymentID != kv.Status.TargetDeploymentID {
			return false, nil
		}
		newImage = launcherImage(kv)
		return w.Outdated == vms && w.NotMovable == vms, nil
	})
	w := e.kubeVirt().Status.WorkloadUpdates
	if len(w.NotMovableVMIs) != vms {
		t.Fatalf("status names %d VMIs not movable (%v), want %d", len(w.NotMovableVMIs), w.NotMovableVMIs, vms)
	}
	for _, entry := range w.NotMovableVMIs {
		if !strings.HasSuffix(entry, ": no other schedulable node") {
			t.Errorf("not movable entry %q, want the reason \"no other schedulable node\"", entry)
		}
	}
	if w.MigrationsCreated != 0 || w.MigrationsInFlight != 0 || w.WaitingForMigration != 0 {
		t.Errorf("status counts migrations: created %d, in flight %d, waiting %d; want none", w.MigrationsCreated, w.MigrationsInFlight, w.WaitingForMigration)
	}
	e.eventually("one WorkloadUpdateNotMovable Event per VMI", time.Minute, func() (bool, error) {
		return e.eventsIn(vmNamespace, core.ReasonNotMovable) == vms, nil
	})

	e.updateSpec(func(s *v1.KubeVirtSpec) {
		s.WorkloadUpdates.Methods = []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate, v1.WorkloadUpdateMethodEvict}
	})
	waitCtx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := vmsim.WaitRunning(waitCtx, vc, vmNamespace, names, newImage); err != nil {
		t.Fatalf("evicted onto the new launcher %s: %v", newImage, err)
	}
	e.eventually("nothing outdated, nothing reported not movable", time.Minute, func() (bool, error) {
		w := e.kubeVirt().Status.WorkloadUpdates
		return w != nil && w.Outdated == 0 && w.NotMovable == 0 && w.Evicted == vms, nil
	})
	if n := migs.total(); n != 0 {
		t.Errorf("%d migrations created on a one-node cluster, want none", n)
	}
}
