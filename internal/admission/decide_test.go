package admission

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/workloads"
)

func kubeVirt(edit func(*v1.KubeVirt)) *v1.KubeVirt {
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"}}
	if edit != nil {
		edit(kv)
	}
	return kv
}

func TestCreate(t *testing.T) {
	if v := Create(kubeVirt(nil), nil); !v.Allowed {
		t.Errorf("the first KubeVirt is refused: %s", v.Message)
	}
	existing := []v1.KubeVirt{*kubeVirt(func(kv *v1.KubeVirt) { kv.Namespace = "elsewhere" })}
	if v := Create(kubeVirt(nil), existing); v.Allowed || v.Message != AlreadyCreated {
		t.Errorf("a second KubeVirt: %+v", v)
	}
	bad := kubeVirt(func(kv *v1.KubeVirt) { zero := uint8(0); kv.Spec.Infra = &v1.ComponentConfig{Replicas: &zero} })
	if v := Create(bad, nil); v.Allowed || !strings.Contains(v.Message, "spec.infra.replicas") {
		t.Errorf("infra replicas 0: %+v", v)
	}
}

func TestUpdateChecksOnlyAChangedSpec(t *testing.T) {
	badSpec := func(kv *v1.KubeVirt) {
		kv.Spec.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{FeatureGates: []string{"Template"}, DisabledFeatureGates: []string{"Template"}}
	}
	old := kubeVirt(badSpec)
	withFinalizer := kubeVirt(badSpec)
	withFinalizer.Finalizers = []string{"kubevirt.io/foregroundDeleteKubeVirt"}
	if v := Update(old, withFinalizer); !v.Allowed {
		t.Errorf("a metadata-only update of a KubeVirt with a bad spec is refused (the operator's finalizer would be stuck): %s", v.Message)
	}
	if v := Update(kubeVirt(nil), kubeVirt(badSpec)); v.Allowed || !strings.Contains(v.Message, "Template is both enabled and disabled") {
		t.Errorf("a gate both enabled and disabled: %+v", v)
	}
}

func TestSpecValidation(t *testing.T) {
	patch := func(typ v1.PatchType, body string) func(*v1.KubeVirt) {
		return func(kv *v1.KubeVirt) {
			kv.Spec.CustomizeComponents.Patches = []v1.CustomizeComponentsPatch{{ResourceType: "Deployment", ResourceName: "virt-api", Type: typ, Patch: body}}
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*v1.KubeVirt)
		want string // "" allowed
	}{
		{"json patch", patch(v1.JSONPatchType, `[{"op":"remove","path":"/spec/template/spec/containers/0/livenessProbe"}]`), ""},
		{"merge patch", patch(v1.MergePatchType, `{"metadata":{"labels":{"a":"b"}}}`), ""},
		{"json patch that is an object", patch(v1.JSONPatchType, `{"op":"add"}`), "a json patch must be a list of operations"},
		{"json patch without a path", patch(v1.JSONPatchType, `[{"op":"add","value":1}]`), "operation 0 needs op and path"},
		{"json patch path not absolute", patch(v1.JSONPatchType, `[{"op":"add","path":"spec","value":1}]`), `path "spec" must start with /`},
		{"merge patch that is a list", patch(v1.MergePatchType, `[1]`), "a merge patch must be an object"},
		{"not JSON", patch(v1.StrategicMergePatchType, `{`), "the patch is not JSON"},
		{"unknown type", patch("yaml", `{}`), `type "yaml"`},
		{"handler rollout", func(kv *v1.KubeVirt) {
			n := int32(-1)
			kv.Spec.HandlerRollout = &v1.HandlerRolloutPolicy{CanarySize: &n}
		}, "spec.handlerRollout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Create(kubeVirt(tc.edit), nil)
			if tc.want == "" && !v.Allowed {
				t.Errorf("refused: %s", v.Message)
			}
			if tc.want != "" && (v.Allowed || !strings.Contains(v.Message, tc.want)) {
				t.Errorf("%+v, want a refusal containing %q", v, tc.want)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	deployed := func(kv *v1.KubeVirt) { kv.Status.Phase = v1.KubeVirtPhaseDeployed }
	kind := func(crd, kind string, n int) workloads.KindCount {
		return workloads.KindCount{Kind: workloads.Kind{CRD: crd, GVK: schema.GroupVersionKind{Kind: kind}}, N: n}
	}
	some := workloads.Counts{kind("virtualmachineinstances.kubevirt.io", "VirtualMachineInstance", 2), kind("virtualmachines.kubevirt.io", "VirtualMachine", 0),
		kind("virtualmachinesnapshots.snapshot.kubevirt.io", "VirtualMachineSnapshot", 1), kind("migrationpolicies.migrations.kubevirt.io", "MigrationPolicy", 1)}
	for _, tc := range []struct {
		name    string
		kv      *v1.KubeVirt
		counts  workloads.Counts
		allowed bool
	}{
		{"deployed with workloads, default strategy", kubeVirt(deployed), some, false},
		{"BlockUninstallIfWorkloadsExist", kubeVirt(func(kv *v1.KubeVirt) {
			deployed(kv)
			kv.Spec.UninstallStrategy = v1.UninstallStrategyBlockUninstallIfWorkloadsExist
		}), some, false},
		{"no workloads", kubeVirt(deployed), workloads.Counts{kind("virtualmachines.kubevirt.io", "VirtualMachine", 0)}, true},
		{"RemoveWorkloads", kubeVirt(func(kv *v1.KubeVirt) { deployed(kv); kv.Spec.UninstallStrategy = v1.UninstallStrategyRemoveWorkloads }), some, true},
		{"not deployed yet", kubeVirt(nil), some, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Delete(tc.kv, tc.counts)
			if v.Allowed != tc.allowed {
				t.Fatalf("%+v", v)
			}
			if !v.Allowed && !strings.Contains(v.Message, "there are still 2 VirtualMachineInstances, 1 VirtualMachineSnapshots, 1 MigrationPolicies present") {
				t.Errorf("the message does not give the counts: %s", v.Message)
			}
		})
	}
}
