package kubevirt

import (
	"context"
	"testing"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// A rollout under way looks again by itself within rolloutResync, whatever it
// waits for; a cluster at rest asks for no resync that soon.
func TestRolloutUnderWayResyncs(t *testing.T) {
	e := newUpgradeEnv(t, func(*v1.KubeVirtSpec) {}) // v1.8.4 at rest, now asked for v1.9.0
	res, err := e.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	kv := e.kubevirt()
	if kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID {
		t.Fatalf("the upgrade is not under way: observed %s == target", kv.Status.ObservedDeploymentID)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > rolloutResync {
		t.Fatalf("an upgrade under way asks to look again after %v, want at most %v", res.RequeueAfter, rolloutResync)
	}

	back := e.kubevirt()
	back.Spec.ImageTag = "v1.8.4" // back to what runs
	if err := e.c.Update(context.Background(), back); err != nil {
		t.Fatal(err)
	}
	res, err = e.reconcile()
	if err != nil {
		t.Fatal(err)
	}
	if kv := e.kubevirt(); kv.Status.ObservedDeploymentID != kv.Status.TargetDeploymentID {
		t.Fatalf("not at rest: observed %s, target %s", kv.Status.ObservedDeploymentID, kv.Status.TargetDeploymentID)
	}
	if res.RequeueAfter > 0 && res.RequeueAfter <= rolloutResync {
		t.Fatalf("at rest the pass asks to look again after %v", res.RequeueAfter)
	}
}
