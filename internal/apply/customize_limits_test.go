package apply_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

// v190 renders v1.9.0's strategy (40 patchable objects) for a spec.
func v190(t *testing.T, patches ...v1.CustomizeComponentsPatch) (*strategy.Strategy, *deployid.Config) {
	t.Helper()
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"}}
	kv.Spec.ImageTag = "v1.9.0"
	kv.Spec.CustomizeComponents.Patches = patches
	cfg, err := deployid.FromKubeVirt(kv, deployid.MapEnv{})
	if err != nil {
		t.Fatal(err)
	}
	base := cfg.DeepCopy()
	base.CustomizeComponents = nil
	s, err := generate.Generate(generate.Input{Config: base})
	if err != nil {
		t.Fatal(err)
	}
	return s, cfg
}

// copyBomb copies a Deployment's spec into itself n times: each copy doubles
// it (14 copies of a 1.1 KB patch took 770 MiB of heap without a limit).
func copyBomb(n int) string {
	ops := []string{`{"op":"add","path":"/spec/template/metadata/annotations","value":{}}`}
	for i := range n {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/spec","path":"/spec/template/metadata/annotations/x%d"}`, i))
	}
	return "[" + strings.Join(ops, ",") + "]"
}

// jsonOps is a json patch of n operations that change nothing.
func jsonOps(n int) string {
	ops := make([]string, n)
	for i := range ops {
		ops[i] = `{"op":"test","path":"/kind","value":"Deployment"}`
	}
	return "[" + strings.Join(ops, ",") + "]"
}

// containers is a strategic patch adding n containers to a pod template.
func containers(n int) string {
	cs := make([]string, n)
	for i := range cs {
		cs[i] = fmt.Sprintf(`{"name":"c%d"}`, i)
	}
	return `{"spec":{"template":{"spec":{"containers":[` + strings.Join(cs, ",") + `]}}}}`
}

// insertions is a json patch adding a list of n elements as a label,
// inserting k more at its head, and removing it.
func insertions(n, k int) string {
	ops := []string{`{"op":"add","path":"/metadata/labels/x","value":[` + strings.Repeat("0,", n-1) + `0]}`}
	for range k {
		ops = append(ops, `{"op":"add","path":"/metadata/labels/x/0","value":1}`)
	}
	ops = append(ops, `{"op":"remove","path":"/metadata/labels/x"}`)
	return "[" + strings.Join(ops, ",") + "]"
}

// copies is a json patch adding an annotation of size bytes and copying it n
// times: size*(n+1) bytes from a patch of size.
func copies(size, n int) string {
	ops := []string{`{"op":"add","path":"/metadata/annotations","value":{"a":"` + strings.Repeat("a", size) + `"}}`}
	for i := range n {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/metadata/annotations/a","path":"/metadata/annotations/c%d"}`, i))
	}
	return "[" + strings.Join(ops, ",") + "]"
}

// annotation is a merge patch adding an annotation of size bytes.
func annotation(size int) string {
	raw, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{"big": strings.Repeat("a", size)}}})
	return string(raw)
}

// A patch that would take the operator's memory is refused by Prepare (which
// the webhook's dry run and the controller both call) as a *PatchError naming
// the patch and the limit: the controller reports it as an invalid
// customization and writes nothing, instead of crash-looping on a CR stored
// before the webhook existed.
func TestPatchLimits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		patch v1.CustomizeComponentsPatch
		want  []string // nil: allowed
	}{
		{"14 copies of a Deployment's spec into itself",
			v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.JSONPatchType, Patch: copyBomb(14)},
			[]string{"customizeComponents.patches[0]", "resourceName virt-api", "does not apply to Deployment kubevirt/virt-api", "copy operations add more than the limit of 3 MiB"}},
		{"a few copies", v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.JSONPatchType,
			Patch: `[{"op":"copy","from":"/metadata/name","path":"/metadata/labels/copied"},{"op":"copy","from":"/spec/template/spec/containers/0","path":"/spec/template/spec/containers/-"}]`}, nil},
		{"10,001 operations", v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.JSONPatchType, Patch: jsonOps(10001)},
			[]string{"customizeComponents.patches[0]", "the json patch has 10001 operations, over the limit of 10000"}},
		{"10,000 operations", v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.JSONPatchType, Patch: jsonOps(10000)}, nil},
		{"an object over 3 MiB", v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.JSONPatchType, Patch: copies(900<<10, 3)},
			[]string{"customizeComponents.patches[0]", "does not apply to Deployment kubevirt/virt-api", "the patched object has", "bytes of JSON, over the limit of 3 MiB"}},
		{"2 MiB added to one object", v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.JSONPatchType, Patch: copies(512<<10, 3)}, nil},
		// 40 objects each 100 KB larger: each is small, all together are not.
		{"100 KB added to every patchable object", v1.CustomizeComponentsPatch{ResourceType: "*", ResourceName: "*", Type: v1.MergePatchType, Patch: annotation(100 << 10)},
			[]string{"customizeComponents.patches[0]", "the patches would make the objects they apply to", "bytes larger together, over the limit of 3 MiB"}},
		{"20 KB added to every patchable object", v1.CustomizeComponentsPatch{ResourceType: "*", ResourceName: "*", Type: v1.StrategicMergePatchType, Patch: annotation(20 << 10)}, nil},
		// Work: each strategic list element is merged into the object's list
		// one by one, each json insertion copies the list.
		{"a strategic patch of 8,000 containers", v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.StrategicMergePatchType, Patch: containers(8000)},
			[]string{"customizeComponents.patches[0]", "Deployment kubevirt/virt-api", "the patches would take 64000000 steps, over the limit of 10000000"}},
		{"a strategic patch of 1,500 containers on every Deployment", v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: "*", Type: v1.StrategicMergePatchType, Patch: containers(1500)},
			[]string{"customizeComponents.patches[0]", "the patches would take 11250000 steps, over the limit of 10000000"}},
		{"a strategic patch of 1,000 containers", v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.StrategicMergePatchType, Patch: containers(1000)}, nil},
		{"10,000 insertions into a list of 100,000", v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.JSONPatchType, Patch: insertions(100000, 9998)},
			[]string{"customizeComponents.patches[0]", "the patches would take 1000000000 steps, over the limit of 10000000"}},
		{"100 insertions into a list of 10,000", v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.JSONPatchType, Patch: insertions(10000, 99)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, cfg := v190(t, tc.patch)
			_, err := apply.Prepare(s, cfg)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var pe *apply.PatchError
			if !errors.As(err, &pe) {
				t.Fatalf("Prepare = %v, want a *PatchError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}

// A merge or strategic patch that makes an object too large is refused too.
func TestPatchedObjectLimit(t *testing.T) {
	for _, typ := range []v1.PatchType{v1.MergePatchType, v1.StrategicMergePatchType} {
		s, cfg := v190(t, // 2.7 MiB, then 400 KB more
			v1.CustomizeComponentsPatch{ResourceType: "DaemonSet", ResourceName: "virt-handler", Type: v1.JSONPatchType, Patch: copies(450<<10, 5)},
			v1.CustomizeComponentsPatch{ResourceType: "DaemonSet", ResourceName: "virt-handler", Type: typ, Patch: annotation(400 << 10)})
		_, err := apply.Prepare(s, cfg)
		if err == nil || !strings.Contains(err.Error(), "customizeComponents.patches[1] (type "+string(typ)) ||
			!strings.Contains(err.Error(), "DaemonSet kubevirt/virt-handler: the patched object has") {
			t.Errorf("a %s patch making virt-handler over 3 MiB: %v", typ, err)
		}
	}
}

// The patches' text is bounded before anything is decoded or applied.
func TestPatchTextLimit(t *testing.T) {
	big := v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: "virt-nothing", Type: v1.MergePatchType, Patch: annotation(400 << 10)}
	s, cfg := v190(t, big, big, big)
	_, err := apply.Prepare(s, cfg)
	var pe *apply.PatchError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "customizeComponents.patches[2]") || !strings.Contains(err.Error(), "over the limit of 1 MiB") {
		t.Errorf("1.2 MB of patches: %v", err)
	}
	s, cfg = v190(t, big, big)
	if _, err := apply.Prepare(s, cfg); err != nil {
		t.Errorf("800 KB of patches: %v", err)
	}
}

// The limit on all objects together counts every patch: two patches each
// within it are refused when together they are not.
func TestPatchGrowthAddsUpAcrossPatches(t *testing.T) {
	// Each patch adds 400 KB and n copies of it to one Deployment.
	two := func(n int) []v1.CustomizeComponentsPatch {
		return []v1.CustomizeComponentsPatch{
			{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.JSONPatchType, Patch: copies(400<<10, n)},
			{ResourceType: "Deployment", ResourceName: "virt-controller", Type: v1.JSONPatchType, Patch: copies(400<<10, n)},
		}
	}
	s, cfg := v190(t, two(4)...)
	_, err := apply.Prepare(s, cfg)
	if err == nil || !strings.Contains(err.Error(), "customizeComponents.patches[1]") || !strings.Contains(err.Error(), "larger together") {
		t.Errorf("2 MB on each of two objects: %v", err)
	}
	s, cfg = v190(t, two(2)...)
	if _, err := apply.Prepare(s, cfg); err != nil {
		t.Errorf("1.2 MB on each of two objects: %v", err)
	}
}
