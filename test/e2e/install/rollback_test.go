package install_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/preflight"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
	"github.com/virt-operator/virt-operator/internal/sandbox/vmsim"
)

const exportsCRD = "virtualmachineexports.export.kubevirt.io"

// A rollback as a supported path: v1.8.4 -> v1.9.0 -> v1.8.4 on 10 nodes with
// 12 VMs (4 not migratable) and a VirtualMachineExport created under v1.9.0,
// which stores it as v1, a version v1.8.4 does not serve. The plan names the
// rollback and what it undoes; the operator rewrites the export as v1beta1
// (both serve it), trims status.storedVersions and rolls back: every step
// Available, every VMI on the v1.8.4 launcher at the end, the export readable
// under v1.8.4 with its spec, three history entries, no VM lost.
func TestRollbackRewritesStoredObjects(t *testing.T) {
	t.Parallel()
	const vms, nonMigratable = 12, 4
	e := startEnv(t, 10, sandboxtest.WithMigrationDuration(300*time.Millisecond))
	spec := v1.KubeVirtSpec{ImageTag: "v1.8.4",
		WorkloadUpdates: &v1.WorkloadUpdatePolicy{Methods: []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate, v1.WorkloadUpdateMethodEvict}},
		HandlerRollout:  &v1.HandlerRolloutPolicy{BakeTime: &v1.Duration{Duration: 2 * time.Second}}}
	e.createKubeVirt(spec)
	oldImage := launcherImage(e.waitAvailable(3 * time.Minute))
	vc, names := e.runVMs(vmsim.CreateOptions{Count: vms, NonMigratable: nonMigratable}, oldImage)

	step := func(tag string) string {
		e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = tag })
		e.waitRolledOver(tag, 5*time.Minute)
		image := launcherImage(e.waitAvailable(3 * time.Minute))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := vmsim.WaitRunning(ctx, vc, vmNamespace, names, image); err != nil {
			t.Fatalf("after the step to %s: %v", tag, err)
		}
		return image
	}
	step("v1.9.0")
	exportV1 := schema.GroupVersionKind{Group: "export.kubevirt.io", Version: "v1", Kind: "VirtualMachineExport"}
	e.userObject(exportV1, vmNamespace, "backup", map[string]any{"source": map[string]any{"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": names[0]}})
	if crd := e.exportsCRD(); !slices.Contains(crd.Status.StoredVersions, "v1") {
		t.Fatalf("v1.9.0 stored versions %v: want v1 (what makes the rollback need a rewrite)", crd.Status.StoredVersions)
	}

	back := *spec.DeepCopy()
	out, code := e.plan(t, back)
	for _, want := range []string{"Roll back KubeVirt v1.9.0 -> v1.8.4", "Rollback: v1.9.0 -> v1.8.4 undoes",
		"CRD versions   stored, no longer served: " + exportsCRD + " v1 (1 VirtualMachineExports, rewritten as v1beta1)", "back to v1.8.4's images",
		"rewritten in a version both releases serve: " + exportsCRD + " v1 (1 VirtualMachineExports, rewritten as v1beta1)"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("the rollback's plan (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
	t.Logf("the rollback's plan:\n%s", out)

	if got := step("v1.8.4"); got != oldImage {
		t.Fatalf("rolled back to launcher %s, want %s", got, oldImage)
	}
	kv := e.kubeVirt()
	if msg := checkMessage(kv.Status.Preflight, preflight.CheckStoredVersions); !strings.Contains(msg, "rewritten as v1beta1") {
		t.Errorf("the preflight's %s: %q, want the rewrite named", preflight.CheckStoredVersions, msg)
	}
	if crd := e.exportsCRD(); slices.Contains(crd.Status.StoredVersions, "v1") || !slices.Contains(crd.Status.StoredVersions, "v1beta1") {
		t.Errorf("stored versions after the rollback %v: want v1beta1, not v1", crd.Status.StoredVersions)
	}
	export := &unstructured.Unstructured{}
	export.SetGroupVersionKind(schema.GroupVersionKind{Group: "export.kubevirt.io", Version: "v1beta1", Kind: "VirtualMachineExport"})
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: vmNamespace, Name: "backup"}, export); err != nil {
		t.Fatalf("the export under v1.8.4: %v", err)
	}
	if name, _, _ := unstructured.NestedString(export.Object, "spec", "source", "name"); name != names[0] {
		t.Errorf("the export's source after the rewrite: %q, want %q", name, names[0])
	}
	if h := kv.Status.History; len(h) != 3 || h[0].ToVersion != "v1.8.4" || h[1].ToVersion != "v1.9.0" || h[2].ToVersion != "v1.8.4" {
		t.Errorf("history %+v: want three entries, the rollback first", h)
	}
	for _, r := range kv.Status.History {
		if r.Outcome != "Succeeded" {
			t.Errorf("history entry to %s: %s", r.ToVersion, r.Outcome)
		}
	}
	var vmList v1.VirtualMachineList
	if err := e.c.List(context.Background(), &vmList, client.InNamespace(vmNamespace)); err != nil || len(vmList.Items) != vms {
		t.Errorf("%d VMs after the rollback (%v), want %d", len(vmList.Items), err, vms)
	}
	if n := e.eventsIn(namespace, "StoredVersionsRetired"); n == 0 {
		t.Error("no StoredVersionsRetired Event for the rewrite")
	}
}

func (e *env) exportsCRD() *apiextensionsv1.CustomResourceDefinition {
	e.t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: exportsCRD}}
	if !e.exists(crd) {
		e.t.Fatalf("CRD %s is gone", exportsCRD)
	}
	return crd
}
