package storedversions

import (
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// version is "name" served, "name*" served and the storage version, "-name"
// listed but not served.
func crd(stored []string, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "virtualmachineexports.export.kubevirt.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "export.kubevirt.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "VirtualMachineExport", ListKind: "VirtualMachineExportList", Plural: "virtualmachineexports"}}}
	for _, v := range versions {
		served, storage := v[0] != '-', v[len(v)-1] == '*'
		name := v
		if !served {
			name = name[1:]
		}
		if storage {
			name = name[:len(name)-1]
		}
		c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: served, Storage: storage})
	}
	c.Status.StoredVersions = stored
	return c
}

func TestDecide(t *testing.T) {
	for _, c := range []struct {
		name          string
		live, desired *apiextensionsv1.CustomResourceDefinition
		objects       int
		want          Action
		retired       []string
		via           string
		text          string
	}{
		{name: "an upgrade keeps every stored version served", live: crd([]string{"v1beta1"}, "v1alpha1", "v1beta1*"), desired: crd(nil, "v1beta1", "v1*"),
			objects: 3, want: Keep, text: "virtualmachineexports.export.kubevirt.io"},
		{name: "the v1.9.0 -> v1.8.4 rollback without exports retires v1", live: crd([]string{"v1beta1", "v1"}, "v1beta1", "v1*"), desired: crd(nil, "v1alpha1", "v1beta1*"),
			want: Retire, retired: []string{"v1"}, text: "virtualmachineexports.export.kubevirt.io v1"},
		{name: "with exports they are rewritten as the target's storage version", live: crd([]string{"v1"}, "v1beta1", "v1*"), desired: crd(nil, "v1alpha1", "v1beta1*"),
			objects: 2, want: Rewrite, retired: []string{"v1"}, via: "v1beta1",
			text: "virtualmachineexports.export.kubevirt.io v1 (2 VirtualMachineExports, rewritten as v1beta1)"},
		{name: "the target's storage version new to it: another version both serve", live: crd([]string{"v2"}, "v1", "v2*"), desired: crd(nil, "v1", "v3*"),
			objects: 1, want: Rewrite, retired: []string{"v2"}, via: "v1"},
		{name: "a version the live CRD lists but does not serve is no common version", live: crd([]string{"v2"}, "-v1", "v2*"), desired: crd(nil, "v1*"),
			objects: 1, want: Refuse, retired: []string{"v2"}, text: "virtualmachineexports.export.kubevirt.io v2 (1 VirtualMachineExports; no version both releases serve)"},
		{name: "a version the target lists but does not serve is retired", live: crd([]string{"v1", "v2"}, "v1", "v2*"), desired: crd(nil, "-v1", "v2*"),
			objects: 4, want: Rewrite, retired: []string{"v1"}, via: "v2"},
		{name: "no version in common", live: crd([]string{"v1"}, "v1*"), desired: crd(nil, "v2*"), objects: 7, want: Refuse, retired: []string{"v1"}},
		{name: "several retired at once", live: crd([]string{"v1alpha1", "v1"}, "v1alpha1", "v1beta1", "v1*"), desired: crd(nil, "v1beta1*"),
			objects: 1, want: Rewrite, retired: []string{"v1alpha1", "v1"}, via: "v1beta1"},
		{name: "a live CRD that has stored nothing yet", live: crd(nil, "v1*"), desired: crd(nil, "v2*"), objects: 0, want: Keep},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(c.live, c.desired, c.objects)
			if d.Action != c.want || !slices.Equal(d.Retired, c.retired) || d.Via != c.via {
				t.Fatalf("%+v: want %s, retired %v, via %q", d, c.want, c.retired, c.via)
			}
			if c.text != "" && d.String() != c.text {
				t.Errorf("String() = %q, want %q", d.String(), c.text)
			}
		})
	}
}

func TestBridge(t *testing.T) {
	live := crd([]string{"v1"}, "v1beta1", "v1*")
	desired := crd(nil, "v1alpha1", "v1beta1*")
	got := Bridge(desired, live, Decide(live, desired, 1)).Spec.Versions
	if len(got) != 3 || got[2].Name != "v1" || got[2].Served || got[2].Storage || !got[1].Storage || got[0].Storage {
		t.Fatalf("bridge versions %+v: want the target's, then v1 neither served nor storage", got)
	}
	if len(desired.Spec.Versions) != 2 {
		t.Fatal("desired was modified")
	}
	// The common version becomes the storage version where the target's own
	// is one the live CRD does not serve.
	live, desired = crd([]string{"v2"}, "v1", "v2*"), crd(nil, "v1", "v3*")
	got = Bridge(desired, live, Decide(live, desired, 1)).Spec.Versions
	if len(got) != 3 || !got[0].Storage || got[1].Storage || got[2].Name != "v2" || got[2].Served {
		t.Fatalf("bridge versions %+v: want v1 the storage version, v3 served, v2 listed", got)
	}
}
