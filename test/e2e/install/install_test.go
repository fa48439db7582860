// Package install_test drives the operator end to end on the sandbox: a real
// API server, controllers and scheduler, kwok nodes, and the install-strategy
// Job executed on the host.
package install_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/sandbox"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

func TestInstallUpgradeAndUninstall(t *testing.T) {
	t.Parallel()
	audit := filepath.Join(t.TempDir(), "audit.log")
	e := startEnv(t, 3, func(o *sandbox.Options) { o.AuditLog = audit })
	ctx := context.Background()

	start := time.Now()
	e.createKubeVirt(v1.KubeVirtSpec{})
	kv := e.waitAvailable(2 * time.Minute)
	t.Logf("CR created → Available in %v", time.Since(start).Round(100*time.Millisecond))
	firstID := kv.Status.TargetDeploymentID

	t.Run("every strategy object exists with the operator's annotations", func(t *testing.T) {
		s := e.loadStrategy(firstID)
		target := metadata.TargetFromStatus(&kv.Status)
		cfg, err := deployid.Parse(kv.Status.TargetDeploymentConfig)
		if err != nil {
			t.Fatal(err)
		}
		// The OpenShift objects are written on OpenShift only, the gated ones with their gates.
		served, err := apply.ServedOnly(apply.Enabled(s, cfg), e.c.RESTMapper())
		if err != nil {
			t.Fatal(err)
		}
		if len(served.SecurityContextConstraints)+len(served.Routes) > 0 || len(s.SecurityContextConstraints) == 0 {
			t.Errorf("the strategy holds %d SCCs; %d SCCs and %d Routes are served here", len(s.SecurityContextConstraints), len(served.SecurityContextConstraints), len(served.Routes))
		}
		for _, want := range served.Objects() {
			live := want.DeepCopyObject().(client.Object)
			if err := e.c.Get(ctx, client.ObjectKeyFromObject(want), live); err != nil {
				t.Errorf("%s %s: %v", want.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(want), err)
				continue
			}
			if !metadata.IsUpToDate(live, target) {
				t.Errorf("%s %s lacks the install-strategy annotations: %v", want.GetObjectKind().GroupVersionKind().Kind, live.GetName(), live.GetAnnotations())
			}
		}
	})

	t.Run("at rest the operator writes nothing but its lease renewals", func(t *testing.T) {
		// At rest from its last write of the install (Available is written
		// before the rollout's last status patches), so the window below
		// holds none of them, however slow the machine.
		offset := e.waitOperatorQuiet(5*time.Second, time.Minute)
		if installWrites := operatorWrites(t, audit, 0); len(installWrites) == 0 {
			t.Fatal("the audit log shows no write by the operator during the install: the filter is wrong")
		}
		// A minute: longer than any delay the operator waits before it looks
		// again during a rollout (rolloutResync, 30 s); at rest it has none.
		time.Sleep(time.Minute)
		if writes := operatorWrites(t, audit, offset); len(writes) > 0 {
			t.Fatalf("%d writes at rest over a minute: %v", len(writes), writes)
		}
	})

	t.Run("a runtime-only change restarts nothing and makes no new strategy", func(t *testing.T) {
		before := e.podUIDs(map[string]string{metadata.AppLabel: "virt-api"})
		apiGeneration := e.deployment("virt-api").Generation
		e.updateSpec(func(s *v1.KubeVirtSpec) {
			size := 3
			s.WorkloadUpdateStrategy.BatchEvictionSize = &size
		})
		// Rolled out: the pass that would have restarted virt-api has written it.
		kv := e.waitSpecRolledOver(time.Minute)
		if kv.Status.TargetDeploymentID != firstID {
			t.Fatalf("deployment ID changed for a runtime-only field")
		}
		if g := e.deployment("virt-api").Generation; g != apiGeneration {
			t.Fatalf("virt-api's Deployment was written (generation %d → %d)", apiGeneration, g)
		}
		if after := e.podUIDs(map[string]string{metadata.AppLabel: "virt-api"}); !sameKeys(before, after) {
			t.Fatalf("virt-api pods were restarted: %v → %v", before, after)
		}
		if n := len(e.strategyConfigMaps()); n != 1 {
			t.Fatalf("%d strategy ConfigMaps, want 1", n)
		}
	})

	t.Run("a corrupt strategy ConfigMap is replaced without restarting anything", func(t *testing.T) {
		before := e.podUIDs(map[string]string{metadata.AppLabel: "virt-api"})
		cm := e.strategyConfigMaps()[0]
		cm.Data[strategy.ManifestsKey] = "not base64 at all!"
		if err := e.c.Update(ctx, &cm); err != nil {
			t.Fatal(err)
		}
		e.eventually("a regenerated strategy", time.Minute, func() (bool, error) {
			cms := e.strategyConfigMaps()
			return len(cms) == 1 && cms[0].UID != cm.UID, nil
		})
		e.loadStrategy(firstID) // decodes
		e.waitAvailable(time.Minute)
		if after := e.podUIDs(map[string]string{metadata.AppLabel: "virt-api"}); !sameKeys(before, after) {
			t.Fatalf("virt-api pods were restarted: %v → %v", before, after)
		}
	})

	t.Run("a hand edit of virt-api is reverted", func(t *testing.T) {
		original := e.deployment("virt-api").Spec.Template.Spec.Containers[0].Image
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d := e.deployment("virt-api")
			d.Spec.Template.Spec.Containers[0].Image = "example.com/virt-api:edited"
			return e.c.Update(ctx, d)
		})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		e.eventually("virt-api's image reverted", time.Minute, func() (bool, error) {
			return e.deployment("virt-api").Spec.Template.Spec.Containers[0].Image == original, nil
		})
		t.Logf("reverted in %v", time.Since(start).Round(10*time.Millisecond))
	})

	t.Run("an imageTag change rolls everything over before observed moves", func(t *testing.T) {
		start := time.Now()
		e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0" })
		var newID string
		e.eventually("the new target", time.Minute, func() (bool, error) {
			kv := e.kubeVirt()
			newID = kv.Status.TargetDeploymentID
			return newID != firstID, nil
		})
		e.eventually("observed == target", 2*time.Minute, func() (bool, error) {
			kv := e.kubeVirt()
			if kv.Status.ObservedDeploymentID != newID {
				return false, nil
			}
			// Observed moved: by now every component must already run the target
			// (virt-template at its own version, new in v1.9).
			for _, d := range e.deployments() {
				want := ":v1.9.0"
				if strings.HasPrefix(d.Name, "virt-template") {
					want = ":v0.2.2"
				}
				if img := d.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, want) || d.Status.UpdatedReplicas != *d.Spec.Replicas ||
					!metadata.IsUpToDate(&d.Spec.Template, metadata.TargetFromStatus(&kv.Status)) {
					t.Fatalf("observed == target while %s runs %s (%d of %d replicas updated)", d.Name, img, d.Status.UpdatedReplicas, *d.Spec.Replicas)
				}
			}
			ds := e.daemonSet("virt-handler")
			if img := ds.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":v1.9.0") || ds.Status.UpdatedNumberScheduled != ds.Status.DesiredNumberScheduled {
				t.Fatalf("observed == target while virt-handler runs %s (%d of %d pods updated)", img, ds.Status.UpdatedNumberScheduled, ds.Status.DesiredNumberScheduled)
			}
			return true, nil
		})
		t.Logf("imageTag change → observed == target in %v", time.Since(start).Round(100*time.Millisecond))
		if cms := e.strategyConfigMaps(); len(cms) != 1 {
			t.Fatalf("%d strategy ConfigMaps after the upgrade, want only the target's", len(cms))
		}
	})

	t.Run("a patch that cannot apply degrades and changes nothing", func(t *testing.T) {
		before := e.deployment("virt-controller").Generation
		e.updateSpec(func(s *v1.KubeVirtSpec) {
			s.CustomizeComponents.Patches = []v1.CustomizeComponentsPatch{{
				ResourceType: "Deployment", ResourceName: "virt-controller", Type: v1.JSONPatchType,
				Patch: `[{"op":"replace","path":"/spec/nonexistent/field","value":1}]`,
			}}
		})
		e.eventually("Degraded naming the patch", time.Minute, func() (bool, error) {
			c := condition(e.kubeVirt(), v1.KubeVirtConditionDegraded)
			return c != nil && c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "virt-controller"), nil
		})
		if after := e.deployment("virt-controller").Generation; after != before {
			t.Fatalf("virt-controller was written (generation %d → %d)", before, after)
		}
		e.updateSpec(func(s *v1.KubeVirtSpec) { s.CustomizeComponents.Patches = nil })
		e.waitSpecRolledOver(time.Minute)
	})

	t.Run("uninstall is blocked by a VMI and by a stopped VM, which survives, then removes everything", func(t *testing.T) {
		vmi := &v1.VirtualMachineInstance{Spec: runtime.RawExtension{Raw: []byte(`{"domain":{"devices":{}}}`)}}
		vmi.Name, vmi.Namespace = "vmi-1", "default"
		if err := e.c.Create(ctx, vmi); err != nil {
			t.Fatal(err)
		}
		halted := v1.RunStrategyHalted
		vm := &v1.VirtualMachine{Spec: v1.VirtualMachineSpec{RunStrategy: &halted,
			Template: &runtime.RawExtension{Raw: []byte(`{"spec":{"domain":{"devices":{}}}}`)}}}
		vm.Name, vm.Namespace = "stopped-vm", "default"
		if err := e.c.Create(ctx, vm); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Delete(ctx, e.kubeVirt()); err != nil {
			t.Fatal(err)
		}
		blockedBy := func(what string) {
			e.eventually("a condition giving the count: "+what, time.Minute, func() (bool, error) {
				c := condition(e.kubeVirt(), v1.KubeVirtConditionSynchronized)
				return c != nil && strings.Contains(c.Message, what), nil
			})
		}
		blockedBy("1 VirtualMachineInstances, 1 VirtualMachines")
		if err := e.c.Delete(ctx, vmi); err != nil {
			t.Fatal(err)
		}
		// The pass that counted the VMI gone and still held wrote this after
		// whatever it deleted: nothing may be gone below.
		blockedBy(": 1 VirtualMachines")
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(vm), vm); err != nil {
			t.Fatalf("the stopped VM did not survive the CR delete: %v", err)
		}
		if len(e.deployments()) == 0 {
			t.Fatal("components were deleted while the uninstall was blocked")
		}
		if err := e.c.Delete(ctx, vm); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		e.eventually("the KubeVirt CR gone", 2*time.Minute, func() (bool, error) {
			err := e.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "kubevirt"}, &v1.KubeVirt{})
			return client.IgnoreNotFound(err) == nil && err != nil, nil
		})
		t.Logf("uninstall took %v", time.Since(start).Round(100*time.Millisecond))
		if left := e.managedObjects(); len(left) > 0 {
			t.Fatalf("left behind: %v", left)
		}
		// With the APIServices gone, namespace deletion no longer hangs on stale discovery.
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "after-uninstall"}}
		if err := e.c.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Delete(ctx, ns); err != nil {
			t.Fatal(err)
		}
		e.eventually("a namespace deleted after the uninstall", time.Minute, func() (bool, error) {
			err := e.c.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{})
			return err != nil && client.IgnoreNotFound(err) == nil, nil
		})
	})
}

func sameKeys(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
