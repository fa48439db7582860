package crd

import (
	"testing"
	"testing/fstest"
)

func TestCRDsDecodeEveryBase(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"kubevirts.kubevirt.io",
		"virtualmachineinstancemigrations.kubevirt.io",
		"virtualmachineinstances.kubevirt.io",
		"virtualmachines.kubevirt.io",
	}
	if len(crds) != len(want) {
		t.Fatalf("got %d CRDs, want %d", len(crds), len(want))
	}
	for i, c := range crds {
		if c.Name != want[i] || c.APIVersion != "apiextensions.k8s.io/v1" || len(c.Spec.Versions) == 0 {
			t.Errorf("CRD %d: %s %s with %d versions", i, c.APIVersion, c.Name, len(c.Spec.Versions))
		}
	}
	crds[0].Name = "changed"
	again, _ := CRDs()
	if again[0].Name != want[0] {
		t.Error("CRDs returned shared objects")
	}
	if _, err := Get("virtualmachines.kubevirt.io"); err != nil {
		t.Error(err)
	}
	if _, err := Get("absent.kubevirt.io"); err == nil {
		t.Error("Get of an unknown CRD succeeded")
	}
}

func TestDecodeRejectsOtherKinds(t *testing.T) {
	fsys := fstest.MapFS{"bases/x.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")}}
	if _, err := decode(fsys); err == nil {
		t.Error("a ConfigMap was accepted as a CRD")
	}
	fsys = fstest.MapFS{"bases/x.yaml": {Data: []byte("kind: [\n")}}
	if _, err := decode(fsys); err == nil {
		t.Error("bad YAML was accepted")
	}
}
