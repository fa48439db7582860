package sandboxcli

import (
	"context"
	"fmt"
	"io"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/sandbox/vmsim"
)

// demo is what `sandbox run` shows once the operator runs: VMs on the installed
// KubeVirt, then an upgrade and the VMs moving onto the new launcher.
type demo struct {
	VMs, NonMigratable int
	// UpgradeTo is the spec.imageTag of the upgrade; empty: no upgrade.
	UpgradeTo string
}

func (d demo) validate() error {
	switch {
	case d.VMs < 0:
		return fmt.Errorf("--vms must be 0 or more, got %d", d.VMs)
	case d.NonMigratable < 0 || d.NonMigratable > d.VMs:
		return fmt.Errorf("--non-migratable must be between 0 and --vms (%d), got %d", d.VMs, d.NonMigratable)
	}
	return nil
}

// demoPoll is how often the demo looks at the CR.
const demoPoll = time.Second

// run plays the demo, printing to out; it stops quietly when ctx ends.
func (d demo) run(ctx context.Context, out io.Writer, vc client.Client, kv client.ObjectKey) error {
	start := time.Now()
	cur, err := waitKubeVirt(ctx, vc, kv, deployedOnTarget)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "KubeVirt %s Deployed after %s.\n", cur.Status.ObservedKubeVirtVersion, since(start))
	if d.VMs == 0 {
		return nil
	}
	names, err := vmsim.CreateVMs(ctx, vc, vmsim.CreateOptions{Count: d.VMs, NonMigratable: d.NonMigratable})
	if err != nil {
		return err
	}
	if err := vmsim.WaitRunning(ctx, vc, vmsim.DefaultNamespace, names, ""); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d VMs running in namespace %s (%d not live-migratable) on %s.\n",
		d.VMs, vmsim.DefaultNamespace, d.NonMigratable, targetLauncher(cur))
	if d.UpgradeTo == "" {
		return nil
	}
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"spec":{"imageTag":%q}}`, d.UpgradeTo))
	if err := vc.Patch(ctx, cur, patch); err != nil {
		return fmt.Errorf("upgrading to %s: %w", d.UpgradeTo, err)
	}
	fmt.Fprintf(out, "Upgrading to %s (spec.imageTag); the VMs move once the control plane is on it:\n", d.UpgradeTo)
	start, last := time.Now(), ""
	cur, err = waitKubeVirt(ctx, vc, kv, func(k *v1.KubeVirt) bool {
		if line := progressLine(k); line != last {
			fmt.Fprintf(out, "  %6s  %s\n", since(start), line)
			last = line
		}
		if !deployedOnTarget(k) || k.Status.ObservedKubeVirtVersion != d.UpgradeTo || !noneOutdated(k) {
			return false
		}
		// The count can still be the one taken before the upgrade (0, every VMI
		// on the old launcher then): the VMIs themselves say when they moved.
		var vmis v1.VirtualMachineInstanceList
		if err := vc.List(ctx, &vmis, client.InNamespace(vmsim.DefaultNamespace)); err != nil {
			return false
		}
		return vmsim.RunningOn(vmis.Items, names, targetLauncher(k)) == len(names)
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "All %d VMs are on the new launcher %s, %s after the upgrade began.\n", d.VMs, targetLauncher(cur), since(start))
	return nil
}

// noneOutdated: the actor's count is 0 (virt-controller's field, else the
// operator's own count).
func noneOutdated(k *v1.KubeVirt) bool {
	if w := k.Status.WorkloadUpdates; w != nil && w.Actor == v1.ActorVirtOperator {
		return w.Outdated == 0
	}
	n := k.Status.OutdatedVirtualMachineInstanceWorkloads
	return n != nil && *n == 0
}

func deployedOnTarget(k *v1.KubeVirt) bool {
	return k.Status.Phase == v1.KubeVirtPhaseDeployed && k.Status.ObservedDeploymentID != "" &&
		k.Status.ObservedDeploymentID == k.Status.TargetDeploymentID
}

// progressLine is one line of upgrade and workload-update progress.
func progressLine(k *v1.KubeVirt) string {
	s := k.Status
	line := fmt.Sprintf("observed %s, target %s", s.ObservedKubeVirtVersion, s.TargetKubeVirtVersion)
	if h := s.HandlerRollout; h != nil {
		line += fmt.Sprintf(" | virt-handler %s %d/%d", h.Phase, h.UpdatedPods, h.DesiredPods)
	}
	if s.OutdatedVirtualMachineInstanceWorkloads != nil {
		line += fmt.Sprintf(" | VMIs outdated %d", *s.OutdatedVirtualMachineInstanceWorkloads)
	}
	w := s.WorkloadUpdates
	switch {
	case w == nil:
	case w.Actor == v1.ActorVirtController:
		line += ", moved by virt-controller"
	case w.Actor == v1.ActorVirtOperator:
		line += fmt.Sprintf(", virt-operator: migrations %d (in flight %d), evicted %d", w.MigrationsCreated, w.MigrationsInFlight, w.Evicted)
		if !deployedOnTarget(k) {
			line += " (waiting: the upgrade is not done)"
		} else if w.Blocked != "" {
			line += " (held: " + w.Blocked + ")"
		}
	}
	return line
}

func targetLauncher(k *v1.KubeVirt) string {
	cfg, err := deployid.Parse(k.Status.TargetDeploymentConfig)
	if err != nil {
		return "an unknown launcher"
	}
	return cfg.Image(deployid.Launcher)
}

func waitKubeVirt(ctx context.Context, c client.Client, key client.ObjectKey, done func(*v1.KubeVirt) bool) (*v1.KubeVirt, error) {
	for {
		kv := &v1.KubeVirt{}
		if err := c.Get(ctx, key, kv); err == nil && done(kv) {
			return kv, nil
		} else if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(demoPoll):
		}
	}
}

func since(t time.Time) string { return time.Since(t).Round(time.Second).String() }
