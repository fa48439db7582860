package install_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
	"github.com/virt-operator/virt-operator/internal/sandbox/vmsim"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// createGroup creates count VMs named prefix-NNNN with these template labels
// and annotations.
func (e *env) createGroup(vc client.Client, prefix string, count int, labels, annotations map[string]string) []string {
	e.t.Helper()
	names, err := vmsim.CreateVMs(context.Background(), vc, vmsim.CreateOptions{Namespace: vmNamespace, NamePrefix: prefix,
		Count: count, Labels: labels, Annotations: annotations})
	if err != nil {
		e.t.Fatal(err)
	}
	return names
}

// The operator's updater on 20 nodes with 400 VMIs packed unevenly (40 pinned to
// one node): a closed maintenance window starts nothing; once it opens, never
// more than one migration leaves a node and never more run than nodes hold
// outdated VMIs; pause holds and resume continues; a VMI whose migrations keep failing backs off with
// growing gaps and is reported after three failures; VMs labelled "None" are
// never touched.
func TestWorkloadUpdatesPacedByCapacity(t *testing.T) {
	t.Parallel()
	const (
		nodes, pinned, spread = 20, 40, 357
		T                     = 500 * time.Millisecond
	)
	e := startEnv(t, nodes, sandboxtest.WithMigrationDuration(T))
	closed := v1.MaintenanceWindow{Start: time.Now().UTC().Add(3 * time.Hour).Format("15:04"), Duration: v1.Duration{Duration: time.Hour}}
	e.createKubeVirt(v1.KubeVirtSpec{
		WorkloadUpdates: &v1.WorkloadUpdatePolicy{
			Methods:      []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate, v1.WorkloadUpdateMethodEvict},
			RetryBackoff: &v1.Duration{Duration: 2 * time.Second}, MaxFailures: ptr.To(int32(3)),
			Windows: []v1.MaintenanceWindow{closed},
		},
		HandlerRollout: &v1.HandlerRolloutPolicy{BakeTime: &v1.Duration{Duration: time.Second}},
	})
	oldImage := launcherImage(e.waitAvailable(3 * time.Minute))
	vc, err := vmsim.NewClient(e.sb.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	names = append(names, e.createGroup(vc, "hot", pinned, nil, map[string]string{vmsim.NodeAnnotation: "node-005"})...)
	names = append(names, e.createGroup(vc, "vm", spread, nil, nil)...)
	kept := e.createGroup(vc, "keep", 2, map[string]string{core.ChoiceKey: string(core.ChoiceNone)}, nil)
	flaky := e.createGroup(vc, "flaky", 1, nil, map[string]string{vmsim.FailMigrationsAnnotation: "5"})
	names = append(append(names, kept...), flaky...)
	waitCtx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := vmsim.WaitRunning(waitCtx, vc, vmNamespace, names, oldImage); err != nil {
		t.Fatal(err)
	}
	keptPods := launcherPods(e, kept)

	migs := e.followMigrations()
	nodeOf, busiest := e.vmiNodes()
	migs.setNodes(nodeOf)
	e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0" })
	e.eventually("the upgrade done, the window closed", 5*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		w := kv.Status.WorkloadUpdates
		return kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID && launcherImage(kv) != oldImage &&
			w != nil && w.Actor == v1.ActorVirtOperator && w.Window != nil && !w.Window.Open && w.Window.NextOpen != nil &&
			w.Outdated == len(names), nil
	})
	// The updater wrote this status after whatever it moved; its passes
	// after it have had their say once it leaves the VMs alone.
	e.waitOperatorQuiet(3*time.Second, time.Minute, "virtualmachineinstancemigrations", "pods")
	if n := migs.total(); n != 0 {
		t.Fatalf("%d migrations started outside the maintenance window", n)
	}
	t.Logf("window closed: %s", e.kubeVirt().Status.WorkloadUpdates.Blocked)

	opened := time.Now()
	e.updateSpec(func(s *v1.KubeVirtSpec) { s.WorkloadUpdates.Windows = nil })
	e.eventually("a quarter of the migrations", 3*time.Minute, func() (bool, error) { return migs.total() >= 100, nil })

	e.updateSpec(func(s *v1.KubeVirtSpec) { s.WorkloadUpdates.Paused = true })
	pausedAt := time.Now()
	e.eventually("status paused", time.Minute, func() (bool, error) {
		w := e.kubeVirt().Status.WorkloadUpdates
		return w != nil && w.Paused && w.MigrationsInFlight == 0, nil
	})
	atPause := migs.total()
	// Every migration ended, so every pass a migration's end wakes has run:
	// once the updater leaves the VMs alone, paused means held.
	e.waitOperatorQuiet(3*time.Second, time.Minute, "virtualmachineinstancemigrations", "pods")
	if n := migs.total(); n != atPause {
		t.Fatalf("%d migrations created while paused", n-atPause)
	}
	e.updateSpec(func(s *v1.KubeVirtSpec) { s.WorkloadUpdates.Paused = false })
	paused := time.Since(pausedAt)

	// Left: the two kept VMs and the flaky one needing attention.
	e.eventually("drained but for the kept and the flaky VMI", 5*time.Minute, func() (bool, error) {
		w := e.kubeVirt().Status.WorkloadUpdates
		return w != nil && w.Outdated == 3 && w.NeedsAttention == 1 && w.Choices != nil && w.Choices.Leave == 2 &&
			w.MigrationsInFlight == 0, nil
	})
	drain := time.Since(opened) - paused
	migs.stop()

	if n := migs.perNodeMax(); n > 1 {
		t.Errorf("%d migrations left one node at once, cap 1", n)
	}
	if migs.maxParallel > nodes {
		t.Errorf("%d migrations at once, cap %d (the nodes running outdated VMIs)", migs.maxParallel, nodes)
	}
	for _, name := range kept {
		if migs.perVMI[name]["created"] != 0 {
			t.Errorf("%s, labelled %s=None, got %d migrations", name, core.ChoiceKey, migs.perVMI[name]["created"])
		}
	}
	if now := launcherPods(e, kept); fmt.Sprint(now) != fmt.Sprint(keptPods) {
		t.Errorf("the kept VMs' launcher pods changed: %v, then %v", keptPods, now)
	}
	times := migs.createdTimes[flaky[0]]
	if len(times) != 3 {
		t.Fatalf("the flaky VMI got %d migrations, want 3 (then it needs attention)", len(times))
	}
	// Each retry waits at least the doubled backoff after the failure (2 s, then
	// 4 s, counted from a failure time the API keeps to the second and the
	// operator rounds up), and a failure comes after its migration's creation;
	// on top come the migration itself and the wait for its node's one slot.
	// The times are the migrations' creationTimestamps, whole seconds: a gap of
	// more than 2 s between true times is at least 2 s between truncated ones,
	// so the bound is exact and holds however slow the machine.
	if g1, g2 := times[1].Sub(times[0]), times[2].Sub(times[1]); g1 < 2*time.Second || g2 < 4*time.Second {
		t.Errorf("gaps between the flaky VMI's migrations %v, %v: want at least 2s, then 4s", g1, g2)
	} else {
		t.Logf("flaky VMI retried after %v, then %v", g1, g2)
	}
	if n := e.eventsIn(vmNamespace, core.ReasonNeedsAttention); n != 1 {
		t.Errorf("%d %s events, want 1", n, core.ReasonNeedsAttention)
	}
	// One Warning per failure; the events API folds those of one VMI into a
	// series, so at least one object.
	if n := e.eventsIn(vmNamespace, core.ReasonFailedMigration); n < 1 {
		t.Errorf("no FailedMigration event")
	}
	w := e.kubeVirt().Status.WorkloadUpdates
	if len(w.NeedsAttentionVMIs) != 1 || w.NeedsAttentionVMIs[0] != vmNamespace+"/"+flaky[0] {
		t.Errorf("needsAttentionVMIs %v", w.NeedsAttentionVMIs)
	}
	// The drain's time against its bound is the machine's speed: logged here,
	// measured by make bench (BenchmarkWorkloadUpdate1000). What the updater
	// guarantees, the caps, is checked above.
	bound := time.Duration(busiest) * T
	t.Logf("%d migrations, at most %d at once and %d per node; drain %v (paused %v not counted), bound %v (busiest node %d VMIs), ratio %.2f",
		migs.total(), migs.maxParallel, migs.perNodeMax(), drain.Round(time.Millisecond), paused.Round(time.Millisecond),
		bound, busiest, drain.Seconds()/bound.Seconds())
}

// launcherPods are the names of the VMIs' launcher pods, sorted by VMI.
func launcherPods(e *env, vmis []string) []string {
	e.t.Helper()
	var out []string
	for _, name := range vmis {
		vmi := &v1.VirtualMachineInstance{}
		if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: vmNamespace, Name: name}, vmi); err != nil {
			e.t.Fatal(err)
		}
		var pods corev1.PodList
		if err := e.c.List(context.Background(), &pods, client.InNamespace(vmNamespace), client.MatchingLabels{vmsim.CreatedByLabel: string(vmi.UID)}); err != nil {
			e.t.Fatal(err)
		}
		for _, p := range pods.Items {
			out = append(out, p.Name)
		}
	}
	return out
}

// A CR written for upstream (spec.workloadUpdateStrategy) has its VMs moved by
// virt-controller, which the VM simulator plays: the operator creates no
// migration, evicts nothing, and says who acts.
func TestUpstreamsFieldLeavesTheMovesToVirtController(t *testing.T) {
	t.Parallel()
	e := startEnv(t, 3, sandboxtest.WithMigrationDuration(300*time.Millisecond))
	e.createKubeVirt(v1.KubeVirtSpec{
		WorkloadUpdateStrategy: v1.KubeVirtWorkloadUpdateStrategy{
			WorkloadUpdateMethods: []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate},
		},
		HandlerRollout: &v1.HandlerRolloutPolicy{BakeTime: &v1.Duration{Duration: time.Second}},
	})
	oldImage := launcherImage(e.waitAvailable(3 * time.Minute))
	vc, err := vmsim.NewClient(e.sb.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	names := e.createGroup(vc, "up", 20, nil, nil)
	waitCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := vmsim.WaitRunning(waitCtx, vc, vmNamespace, names, oldImage); err != nil {
		t.Fatal(err)
	}
	migs := e.followMigrations()
	e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0" })
	e.eventually("virt-controller's count at 0, every VMI migrated", 5*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		up := kv.Status.OutdatedVirtualMachineInstanceWorkloads
		w := kv.Status.WorkloadUpdates
		return kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID && launcherImage(kv) != oldImage &&
			up != nil && *up == 0 && w != nil && w.Outdated == 0 && migs.total() >= len(names), nil
	})
	w := e.kubeVirt().Status.WorkloadUpdates
	if w.Actor != v1.ActorVirtController || w.MigrationsCreated != 0 || w.Evicted != 0 {
		t.Errorf("status.workloadUpdates %+v: want actor virt-controller and nothing done by the operator", w)
	}
	// The simulator sends no Events; the operator sends one per migration it creates.
	if n := e.eventsIn(vmNamespace, core.ReasonSuccessfulCreate); n != 0 {
		t.Errorf("the operator created %d migrations beside virt-controller", n)
	}
	if migs.maxParallel > core.DefaultParallelMigrations {
		t.Errorf("virt-controller's updater ran %d at once, its cap is %d", migs.maxParallel, core.DefaultParallelMigrations)
	}
	t.Logf("%d migrations by the simulated virt-controller; status %+v", migs.total(), w)
}
