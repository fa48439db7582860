package install_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/rollout"
	"github.com/virt-operator/virt-operator/internal/sandbox/vmsim"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// handlerPods are the virt-handler pods by node: UID, and whether terminating.
func (e *env) handlerPods() map[string]corev1.Pod {
	e.t.Helper()
	var pods corev1.PodList
	if err := e.c.List(context.Background(), &pods, client.InNamespace(namespace), client.MatchingLabels{"kubevirt.io": "virt-handler"}); err != nil {
		e.t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			out[p.Spec.NodeName] = p
		}
	}
	return out
}

// Upstream's quarantined upgrade test 3145: a virt-handler restarted under a
// live migration fails it ("Cannot migrate VMI in finalized state"). Here a
// migration runs between the sandbox's two nodes when the upgrade starts, so
// every node is busy: the canary is pinned on one of them and waits there,
// its pod left in place and the status naming node and migration, until the
// migration has finished; then the canary goes on, on that node, and the
// upgrade completes. Order and state only: no pod replaced while the
// migration was unfinished, the wait seen while it was. The simulator holds
// the migration (vmsim.HoldMigrationAnnotation) until the wait has been seen,
// however long the upgrade takes to reach the canary.
func TestHandlerCanaryWaitsForMigration(t *testing.T) {
	t.Parallel()
	e := startEnv(t, 2)
	e.createKubeVirt(v1.KubeVirtSpec{HandlerRollout: &v1.HandlerRolloutPolicy{BakeTime: &v1.Duration{Duration: 2 * time.Second}}})
	kv := e.waitAvailable(3 * time.Minute)

	_, names := e.runVMs(vmsim.CreateOptions{NamePrefix: "busy", Count: 1}, launcherImage(kv))
	ctx := context.Background()
	before := e.handlerPods()
	if len(before) != 2 {
		t.Fatalf("%d virt-handler pods, want one per node", len(before))
	}

	mig := &v1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: vmNamespace, Name: "busy-migration",
		Annotations: map[string]string{vmsim.HoldMigrationAnnotation: "true"}},
		Spec: v1.VirtualMachineInstanceMigrationSpec{VMIName: names[0]}}
	if err := e.c.Create(ctx, mig); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKeyFromObject(mig)
	var source, target string
	e.eventually("the migration running between the two nodes", time.Minute, func() (bool, error) {
		if err := e.c.Get(ctx, key, mig); err != nil {
			return false, err
		}
		st := mig.Status.MigrationState
		if core.IsFinished(mig) {
			t.Fatalf("the migration finished before the upgrade began: %s", mig.Status.Phase)
		}
		if st == nil || st.SourceNode == "" || st.TargetNode == "" {
			return false, nil
		}
		source, target = st.SourceNode, st.TargetNode
		return true, nil
	})
	if source == target {
		t.Fatalf("the migration stays on %s: the other node is free and would be the canary", source)
	}
	t.Logf("migration %s: %s → %s", key, source, target)

	e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0" })
	replaced := func(now map[string]corev1.Pod) []string {
		var out []string
		for node, p := range before {
			if q, ok := now[node]; !ok || q.UID != p.UID || q.DeletionTimestamp != nil {
				out = append(out, node)
			}
		}
		return out
	}
	var waitedOn string
	deadline := time.Now().Add(3 * time.Minute)
	for {
		// The pods first, then the migration: a pod seen replaced while the
		// migration read after it is still unfinished was replaced under it.
		gone := replaced(e.handlerPods())
		if err := e.c.Get(ctx, key, mig); err != nil {
			t.Fatal(err)
		}
		if core.IsFinished(mig) {
			break
		}
		if len(gone) > 0 {
			t.Fatalf("virt-handler replaced on %v while migration %s (%s → %s) was unfinished (%s)", gone, key, source, target, mig.Status.Phase)
		}
		if hr := e.kubeVirt().Status.HandlerRollout; waitedOn == "" && hr != nil && hr.Phase == string(rollout.PhaseCanary) &&
			len(hr.MigrationWaits) == 1 && hr.NodesWaitingForMigrations == 1 && hr.MigrationWaits[0].Migration == key.String() {
			waitedOn = hr.MigrationWaits[0].Node
			if waitedOn != hr.CanaryNode || (waitedOn != source && waitedOn != target) || !strings.Contains(hr.Message, "migration "+key.String()) {
				t.Fatalf("the canary waits wrongly: %+v", hr)
			}
			t.Logf("while the migration runs: %s", hr.Message)
			// Seen waiting: the migration may end now.
			release := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+vmsim.HoldMigrationAnnotation+`":null}}}`))
			if err := e.c.Patch(ctx, mig, release); err != nil {
				t.Fatal(err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the migration did not finish (the canary seen waiting for it: %v): %+v", waitedOn != "", mig.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if mig.Status.Phase != v1.MigrationSucceeded || waitedOn == "" {
		t.Fatalf("the migration ended %s before the canary was seen waiting for it", mig.Status.Phase)
	}

	e.eventually("the upgrade done (observed == target)", 3*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		return kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID && kv.Status.ObservedKubeVirtVersion == "v1.9.0", nil
	})
	hr := e.kubeVirt().Status.HandlerRollout
	if hr == nil || hr.Phase != string(rollout.PhaseSuccessful) || hr.CanaryNode != waitedOn || hr.NodesWaitingForMigrations != 0 || len(hr.MigrationWaits) != 0 {
		t.Fatalf("after the upgrade: %+v, want Successful with the canary on %s and no waits", hr, waitedOn)
	}
	if gone := replaced(e.handlerPods()); len(gone) != 2 {
		t.Fatalf("virt-handler replaced on %v, want both nodes", gone)
	}
	var vmi v1.VirtualMachineInstance
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: vmNamespace, Name: names[0]}, &vmi); err != nil {
		t.Fatal(err)
	}
	t.Logf("VMI %s on %s after its migration", vmi.Name, vmi.Status.NodeName)
}
