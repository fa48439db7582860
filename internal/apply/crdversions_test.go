package apply

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

func TestWithRetiredVersions(t *testing.T) {
	version := func(name string, served, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: served, Storage: storage}
	}
	live := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
		version("v1beta1", true, false), version("v1", true, true)}}}
	desired := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
		version("v1alpha1", true, false), version("v1beta1", true, true)}}}
	bridge := WithRetiredVersions(desired, live, []string{"v1"})
	got := bridge.Spec.Versions
	if len(got) != 3 || got[2].Name != "v1" || got[2].Served || got[2].Storage || !got[1].Storage {
		t.Fatalf("bridge versions %+v: want the target's, then v1 neither served nor storage", got)
	}
	if len(desired.Spec.Versions) != 2 {
		t.Fatal("desired was modified")
	}
}
