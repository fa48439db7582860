// Package vmsim_test checks the sandbox's VM simulator end to end: VMs and VMIs
// created like `virt-sandbox vms create` does, launcher pods with virt-controller's
// launcher image, migrations that succeed or fail on request, and evictions that
// restart a VM with the new image.
package vmsim_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/sandbox"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
	"github.com/virt-operator/virt-operator/internal/sandbox/vmsim"
)

const (
	ns       = "default"
	imageV1  = "example.com/virt-launcher:v1"
	imageV2  = "example.com/virt-launcher:v2"
	duration = 300 * time.Millisecond
)

// env is a sandbox running the simulator, and a fast client to it.
type env struct {
	t   *testing.T
	c   client.Client
	ctx context.Context
	sb  *sandbox.Sandbox
}

func start(t *testing.T, nodes int) *env {
	t.Helper()
	sb := sandboxtest.Start(t, nodes, sandboxtest.WithHostExec(t), sandboxtest.WithMigrationDuration(duration))
	if _, ok := sandboxtest.Pids(t, sb.Dir)["vmsim"]; !ok {
		t.Fatal("no vmsim process in state.json")
	}
	c, err := vmsim.NewClient(sb.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, c: c, ctx: t.Context(), sb: sb}
}

// virtController creates a Deployment standing in for virt-controller: the
// simulator reads the launcher image from its args.
func (e *env) virtController(image string) *appsv1.Deployment {
	e.t.Helper()
	labels := map[string]string{vmsim.AppLabel: vmsim.ControllerApp}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "virt-controller", Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "virt-controller", Image: "example.com/virt-controller:v1",
					Args: []string{"--launcher-image", image, "--port", "8443"},
				}}},
			},
		},
	}
	if err := e.c.Create(e.ctx, d); err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) vmi(name string) *v1.VirtualMachineInstance {
	e.t.Helper()
	vmi := &v1.VirtualMachineInstance{}
	if err := e.c.Get(e.ctx, types.NamespacedName{Namespace: ns, Name: name}, vmi); err != nil {
		e.t.Fatal(err)
	}
	return vmi
}

func (e *env) pods(vmi *v1.VirtualMachineInstance) []corev1.Pod {
	e.t.Helper()
	var list corev1.PodList
	if err := e.c.List(e.ctx, &list, client.InNamespace(ns), client.MatchingLabels{vmsim.CreatedByLabel: string(vmi.UID)}); err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

// migrate creates a migration of vmi and waits for it to finish, returning it and
// the time from just before its creation to its final phase as the client saw
// it: never less than the migration's run, however slow the machine.
func (e *env) migrate(name, vmi string) (*v1.VirtualMachineInstanceMigration, time.Duration) {
	e.t.Helper()
	m, took, err := e.tryMigrate(name, vmi)
	if err != nil {
		e.t.Fatal(err)
	}
	return m, took
}

// tryMigrate is migrate for other goroutines than the test's.
func (e *env) tryMigrate(name, vmi string) (*v1.VirtualMachineInstanceMigration, time.Duration, error) {
	m := &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: vmi},
	}
	// Before the create: the simulator's clock for the migration starts after
	// it sees the migration, so took >= the migration's duration holds.
	created := time.Now()
	if err := e.c.Create(e.ctx, m); err != nil {
		return nil, 0, err
	}
	for {
		if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return nil, 0, err
		}
		if m.Status.Phase == v1.MigrationSucceeded || m.Status.Phase == v1.MigrationFailed {
			return m, time.Since(created), nil
		}
		if time.Since(created) > 2*time.Minute { // generous: only a migration that never ends
			return nil, 0, fmt.Errorf("migration %s still %q after 2 minutes", name, m.Status.Phase)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startSimulator runs another VM simulator on the sandbox, as after a crash,
// with this migration duration; the test stops it, and logs its output if the
// test failed.
func (e *env) startSimulator(t *testing.T, name string, migrationDuration time.Duration) *exec.Cmd {
	t.Helper()
	sim := exec.Command(sandboxtest.SandboxBinary(t), "vmsim", "--kubeconfig="+e.sb.Kubeconfig(),
		"--migration-duration="+migrationDuration.String())
	log := filepath.Join(t.TempDir(), name+".log")
	out, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	sim.Stdout, sim.Stderr = out, out
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sim.Process.Kill()
		_ = sim.Wait()
		_ = out.Close()
		if t.Failed() {
			data, _ := os.ReadFile(log)
			t.Logf("%s's log:\n%s", name, data)
		}
	})
	return sim
}

func (e *env) eventually(what string, cond func() (bool, error)) {
	e.t.Helper()
	sandboxtest.Eventually(e.t, time.Minute, what, cond)
}

func condition(vmi *v1.VirtualMachineInstance, t v1.VirtualMachineInstanceConditionType) *v1.VirtualMachineInstanceCondition {
	for i := range vmi.Status.Conditions {
		if vmi.Status.Conditions[i].Type == t {
			return &vmi.Status.Conditions[i]
		}
	}
	return nil
}

func TestSimulatedVMs(t *testing.T) {
	e := start(t, 3)
	d := e.virtController(imageV1)

	names, err := vmsim.CreateVMs(e.ctx, e.c, vmsim.CreateOptions{Namespace: ns, Count: 5, NonMigratable: 1})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	wctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	if err := vmsim.WaitRunning(wctx, e.c, ns, names, imageV1); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d VMIs Running on %s in %s", len(names), imageV1, time.Since(began).Round(time.Millisecond))
	for _, name := range names {
		vmi := e.vmi(name)
		pods := e.pods(vmi)
		if len(pods) != 1 || pods[0].Spec.NodeName != vmi.Status.NodeName || vmi.Status.ActivePods[pods[0].UID] != vmi.Status.NodeName {
			t.Fatalf("VMI %s: want one launcher pod on its node, got %d pods, status %+v", name, len(pods), vmi.Status)
		}
		wantMigratable := name != names[4]
		if c := condition(vmi, v1.VMIConditionLiveMigratable); c == nil || (c.Status == corev1.ConditionTrue) != wantMigratable {
			t.Errorf("VMI %s: LiveMigratable %+v, want migratable=%v", name, c, wantMigratable)
		}
	}

	// An upgrade: virt-controller names a new launcher image.
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Template.Spec.Containers[0].Args[1] = imageV2
	if err := e.c.Patch(e.ctx, d, patch); err != nil {
		t.Fatal(err)
	}
	// The simulator has seen the new image once a new VM starts on it (its
	// cache only moves forward), rather than after a fixed sleep.
	probe, err := vmsim.CreateVMs(e.ctx, e.c, vmsim.CreateOptions{Namespace: ns, NamePrefix: "probe", Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer pcancel()
	if err := vmsim.WaitRunning(pctx, e.c, ns, probe, imageV2); err != nil {
		t.Fatalf("a VM created after the upgrade: %v", err)
	}

	t.Run("migration moves the VMI to the new launcher image", func(t *testing.T) {
		before := e.vmi(names[0])
		source := e.pods(before)[0]
		m, took := e.migrate("migrate-0", names[0])
		t.Logf("migration Succeeded %s after creation (duration %s)", took.Round(time.Millisecond), duration)
		if m.Status.Phase != v1.MigrationSucceeded {
			t.Fatalf("migration %s, want Succeeded", m.Status.Phase)
		}
		// A lower bound only: the migration cannot end before it ran its
		// duration. How much longer it took is the machine's speed (logged above).
		if took < duration {
			t.Errorf("migration Succeeded %s after it was created, before its duration %s", took, duration)
		}
		vmi := e.vmi(names[0])
		ms := vmi.Status.MigrationState
		if vmi.Status.LauncherContainerImageVersion != imageV2 || ms == nil || !ms.Completed || ms.Failed || ms.MigrationUID != m.UID ||
			ms.SourceNode != source.Spec.NodeName || ms.TargetNode != vmi.Status.NodeName || ms.EndTimestamp == nil {
			t.Fatalf("VMI after migration: %+v (migration state %+v)", vmi.Status, ms)
		}
		e.eventually("source pod gone", func() (bool, error) {
			pods := e.pods(vmi)
			return len(pods) == 1 && pods[0].Name == ms.TargetPod && pods[0].Labels[vmsim.MigrationJobLabel] == string(m.UID), fmt.Errorf("pods %v", podNames(pods))
		})
	})

	t.Run("fail-migrations marker fails the next migration only", func(t *testing.T) {
		vmi := e.vmi(names[1])
		patch := client.MergeFrom(vmi.DeepCopy())
		vmi.Annotations = map[string]string{vmsim.FailMigrationsAnnotation: "1"}
		if err := e.c.Patch(e.ctx, vmi, patch); err != nil {
			t.Fatal(err)
		}
		m, took := e.migrate("migrate-1a", names[1])
		if m.Status.Phase != v1.MigrationFailed {
			t.Fatalf("first migration %s, want Failed", m.Status.Phase)
		}
		t.Logf("migration Failed %s after creation", took.Round(time.Millisecond))
		vmi = e.vmi(names[1])
		if ms := vmi.Status.MigrationState; ms == nil || !ms.Failed || !ms.Completed || vmi.Status.LauncherContainerImageVersion != imageV1 {
			t.Fatalf("VMI after failed migration: %+v (migration state %+v)", vmi.Status, vmi.Status.MigrationState)
		}
		if _, ok := vmi.Annotations[vmsim.FailMigrationsAnnotation]; ok {
			t.Errorf("%s still on the VMI after its last failure: %v", vmsim.FailMigrationsAnnotation, vmi.Annotations)
		}
		e.eventually("target pod of the failed migration gone", func() (bool, error) {
			pods := e.pods(vmi)
			return len(pods) == 1 && pods[0].Labels[vmsim.MigrationJobLabel] == "", fmt.Errorf("pods %v", podNames(pods))
		})
		m, _ = e.migrate("migrate-1b", names[1])
		if m.Status.Phase != v1.MigrationSucceeded {
			t.Fatalf("second migration %s, want Succeeded", m.Status.Phase)
		}
		if got := e.vmi(names[1]).Status.LauncherContainerImageVersion; got != imageV2 {
			t.Errorf("image after the second migration %s, want %s", got, imageV2)
		}
	})

	t.Run("non-migratable VMI: migration fails, eviction restarts the VM on the new image", func(t *testing.T) {
		if m, _ := e.migrate("migrate-4", names[4]); m.Status.Phase != v1.MigrationFailed {
			t.Fatalf("migration of a non-migratable VMI %s, want Failed", m.Status.Phase)
		}
		old := e.vmi(names[4])
		pod := e.pods(old)[0]
		eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}}
		if err := e.c.SubResource("eviction").Create(e.ctx, &pod, eviction); err != nil {
			t.Fatal(err)
		}
		evicted := time.Now()
		e.eventually("a new VMI running the new image", func() (bool, error) {
			vmi := &v1.VirtualMachineInstance{}
			if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(old), vmi); err != nil {
				return false, err
			}
			return vmi.UID != old.UID && vmi.Status.Phase == v1.VMIRunning && vmi.Status.LauncherContainerImageVersion == imageV2,
				fmt.Errorf("VMI uid %s phase %s image %s", vmi.UID, vmi.Status.Phase, vmi.Status.LauncherContainerImageVersion)
		})
		t.Logf("evicted VMI replaced and Running in %s", time.Since(evicted).Round(time.Millisecond))
		vmi := e.vmi(names[4])
		vm := &v1.VirtualMachine{}
		e.eventually("VM Running", func() (bool, error) {
			err := e.c.Get(e.ctx, client.ObjectKeyFromObject(vmi), vm)
			return err == nil && vm.Status.PrintableStatus == "Running" && vm.Status.Ready, fmt.Errorf("VM status %+v, %v", vm.Status, err)
		})
		if !metav1.IsControlledBy(vmi, vm) || vmi.Labels[vmsim.NonMigratableLabel] != "true" {
			t.Errorf("new VMI: owners %v labels %v, want controlled by VM %s, non-migratable", vmi.OwnerReferences, vmi.Labels, vm.UID)
		}
	})

	t.Run("a restarted simulator finishes a migration exactly once", func(t *testing.T) {
		// The simulator is killed mid-migration. Not by racing a 300 ms
		// migration: the sandbox's simulator makes way for one whose migrations
		// last an hour, which is killed once the migration runs, and a third,
		// with the usual duration, takes over (the migration's clock is on its
		// target pod, so it finishes at once).
		if err := syscall.Kill(sandboxtest.Pids(t, e.sb.Dir)["vmsim"], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		slow := e.startSimulator(t, "vmsim-slow", time.Hour)
		vmi := e.vmi(names[2])
		m := &v1.VirtualMachineInstanceMigration{
			ObjectMeta: metav1.ObjectMeta{Name: "migrate-2", Namespace: ns},
			Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: names[2]},
		}
		if err := e.c.Create(e.ctx, m); err != nil {
			t.Fatal(err)
		}
		e.eventually("migration Running", func() (bool, error) {
			err := e.c.Get(e.ctx, client.ObjectKeyFromObject(m), m)
			return m.Status.Phase == v1.MigrationRunning, fmt.Errorf("phase %q, %v", m.Status.Phase, err)
		})
		if err := slow.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = slow.Wait()
		if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(m), m); err != nil || m.Status.Phase != v1.MigrationRunning {
			t.Fatalf("migration %q after the kill (%v): the simulator was not killed mid-migration", m.Status.Phase, err)
		}
		e.startSimulator(t, "vmsim-again", duration)
		e.eventually("migration Succeeded after the restart", func() (bool, error) {
			err := e.c.Get(e.ctx, client.ObjectKeyFromObject(m), m)
			return m.Status.Phase == v1.MigrationSucceeded, err
		})
		e.eventually("one launcher pod: the target", func() (bool, error) {
			pods := e.pods(vmi)
			return len(pods) == 1 && pods[0].Labels[vmsim.MigrationJobLabel] == string(m.UID), fmt.Errorf("pods %v", podNames(pods))
		})
		if got := e.vmi(names[2]); got.Status.LauncherContainerImageVersion != imageV2 || got.Status.MigrationState.MigrationUID != m.UID {
			t.Errorf("VMI after the restart: %+v", got.Status)
		}
		// Every other VMI kept its one launcher pod.
		for _, name := range []string{names[0], names[1], names[3]} {
			if pods := e.pods(e.vmi(name)); len(pods) != 1 {
				t.Errorf("VMI %s: pods %v after the restart", name, podNames(pods))
			}
		}
	})
}

// TestManyVMs measures what the operator's workload-update benchmark relies on:
// how fast 200 VMIs start, and the simulator's overhead on migrations run five at
// a time.
func TestManyVMs(t *testing.T) {
	e := start(t, 4)
	e.virtController(imageV1)
	began := time.Now()
	names, err := vmsim.CreateVMs(e.ctx, e.c, vmsim.CreateOptions{Namespace: ns, Count: 200})
	if err != nil {
		t.Fatal(err)
	}
	created := time.Since(began)
	wctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()
	if err := vmsim.WaitRunning(wctx, e.c, ns, names, imageV1); err != nil {
		t.Fatal(err)
	}
	t.Logf("200 VMs and VMIs created in %s, all Running in %s", created.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))

	const total, parallel = 40, 5
	began = time.Now()
	var tooks []time.Duration
	work := make(chan int)
	results := make(chan time.Duration, total)
	for range parallel {
		go func() {
			for i := range work {
				m, took, err := e.tryMigrate(fmt.Sprintf("bench-%d", i), names[i])
				switch {
				case err != nil:
					t.Error(err)
				case m.Status.Phase != v1.MigrationSucceeded:
					t.Errorf("migration %s: %s", m.Name, m.Status.Phase)
				}
				results <- took
			}
		}()
	}
	for i := range total {
		work <- i
	}
	close(work)
	for range total {
		tooks = append(tooks, <-results)
	}
	elapsed := time.Since(began)
	bound := time.Duration(total/parallel) * duration
	slices.Sort(tooks)
	// The figures are the machine's speed, reported, not checked; what holds on
	// any machine is that no migration ended before its duration, hence that
	// five workers running total migrations back to back took at least the bound.
	t.Logf("%d migrations %d at a time in %s: %.2f× the bound %s; per migration median %s, max %s (duration %s)",
		total, parallel, elapsed.Round(time.Millisecond), float64(elapsed)/float64(bound), bound,
		tooks[len(tooks)/2].Round(time.Millisecond), tooks[len(tooks)-1].Round(time.Millisecond), duration)
	if tooks[0] < duration {
		t.Errorf("a migration Succeeded %s after it was created, before its duration %s", tooks[0], duration)
	}
	if elapsed < bound {
		t.Errorf("%d migrations %d at a time took %s, less than %d durations back to back (%s)", total, parallel, elapsed, total/parallel, bound)
	}
}

func podNames(pods []corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return names
}
