package apply

import (
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

func managed[T client.Object](o T) T {
	l := o.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[metadata.ManagedByLabel] = metadata.ManagedByValue
	o.SetLabels(l)
	return o
}

func names(objs []client.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, RefOf(o).String())
	}
	return out
}

func TestOrphans(t *testing.T) {
	kept := managed(deployment(VirtAPI, 2))
	legacy := deployment("old-component", 1)
	legacy.Labels[metadata.ManagedByLabel] = metadata.LegacyManagedByValue
	strategyCM := managed(configMap("kubevirt-install-strategy-abcde"))
	strategyCM.Labels[metadata.InstallStrategyLabel] = ""
	live := []client.Object{
		managed(clusterRole("old-role")),
		kept,
		legacy,
		deployment("not-ours", 1), // unmanaged
		strategyCM,
		managed(&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "virt-operator-tmp-webhook-xyz"}}),
		managed(&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "old-webhook"}}),
		managed(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "old-certs", Namespace: ns}}),
	}
	got := names(Orphans([]ObjectRef{RefOf(kept)}, live))
	want := []string{"ValidatingWebhookConfiguration old-webhook", "ValidatingWebhookConfiguration virt-operator-tmp-webhook-xyz", "Secret kubevirt/old-certs",
		"Deployment kubevirt/old-component", "ClusterRole old-role"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Orphans = %v, want %v", got, want)
	}
	// With nothing desired, virt-api is an orphan too.
	if acts := Deletions(Orphans(nil, live), "orphan"); len(acts) != 6 || acts[0].Op != OpDelete {
		t.Errorf("%d deletions, want 6", len(acts))
	}
}

func TestUninstallOrder(t *testing.T) {
	crd := managed(&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "kubevirts.kubevirt.io"}})
	objs := []client.Object{
		configMap("b"), serviceAccount("sa"), deployment(VirtAPI, 2), configMap("a"), daemonSet(VirtHandler), crd,
		clusterRole("r"), clusterRoleBinding("r"), service("s"),
	}
	var got [][]string
	for _, g := range UninstallOrder(objs) {
		got = append(got, names(g))
	}
	want := [][]string{
		{"CustomResourceDefinition kubevirts.kubevirt.io"}, {"DaemonSet kubevirt/virt-handler"}, {"Deployment kubevirt/virt-api"},
		{"Service kubevirt/s"}, {"ClusterRoleBinding r"}, {"ClusterRole r"}, {"ServiceAccount kubevirt/sa"},
		{"ConfigMap kubevirt/a", "ConfigMap kubevirt/b"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("UninstallOrder =\n%v\nwant\n%v", got, want)
	}
	if objs[0].GetName() != "b" {
		t.Error("the input was reordered")
	}
}

// What becomes of a managed CRD the target no longer has: only one holding no
// user object, or one retained before the CR's annotation named it and holding
// no more objects than then, is ever deleted.
func TestDecideCRD(t *testing.T) {
	three := 3
	for _, tc := range []struct {
		name string
		d    CRDData
		want CRDFate
		says string
	}{
		{"empty", CRDData{Held: "0 Plugins"}, FateDelete, "deleted (no objects)"},
		{"empty, retained and named", CRDData{Held: "0 Plugins", Retained: true, Recorded: &three, Named: true}, FateDelete, "deleted (no objects)"},
		{"with data", CRDData{Objects: 3, Held: "3 Plugins"}, FateRetain, "kept for its data (3 Plugins)"},
		{"with data, named before it was retained", CRDData{Objects: 3, Held: "3 Plugins", Named: true}, FateRetain, "kept for its data (3 Plugins)"},
		{"not countable", CRDData{Unknown: "forbidden: no"}, FateRetain, "kept: its objects cannot be counted (forbidden: no)"},
		{"retained", CRDData{Objects: 3, Held: "3 Plugins", Retained: true, Recorded: &three}, FateKeep, "kept for its data (3 Plugins)"},
		{"retained, named, as many as recorded", CRDData{Objects: 3, Held: "3 Plugins", Retained: true, Recorded: &three, Named: true}, FateDeleteRetained,
			"deleted with its objects (3 Plugins), as kubevirt.io/virt-operator-delete-retained-crds asks"},
		{"retained, named, fewer", CRDData{Objects: 1, Held: "1 Plugins", Retained: true, Recorded: &three, Named: true}, FateDeleteRetained, "deleted with its objects (1 Plugins)"},
		{"retained, named, more than recorded", CRDData{Objects: 4, Held: "4 Plugins", Retained: true, Recorded: &three, Named: true}, FateRecount,
			"kept for its data (4 Plugins): it held 3 when it was kept, all that naming it confirms; its name is removed"},
		{"retained, named, none recorded", CRDData{Objects: 4, Held: "4 Plugins", Retained: true, Named: true}, FateRecount,
			"kept for its data (4 Plugins): no count was recorded when it was kept"},
		{"retained, named, not countable", CRDData{Unknown: "forbidden: no", Retained: true, Recorded: &three, Named: true}, FateKeep,
			"kept: its objects cannot be counted (forbidden: no)"},
	} {
		if got := DecideCRD(tc.d); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
		if got := tc.d.Describe(); !strings.HasPrefix(got, tc.says) {
			t.Errorf("%s: says %q, want %q", tc.name, got, tc.says)
		}
	}
}

// A CRD orphan is deleted only when it holds no user object; one not counted
// is kept. Other orphans are deleted.
func TestKeepData(t *testing.T) {
	crd := func(name string) client.Object {
		return managed(&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	orphans := []client.Object{crd("empty.kubevirt.io"), crd("held.kubevirt.io"), crd("unknown.kubevirt.io"), crd("uncounted.kubevirt.io"), managed(clusterRole("old-role"))}
	data := map[string]CRDData{"empty.kubevirt.io": {}, "held.kubevirt.io": {Objects: 1}, "unknown.kubevirt.io": {Unknown: "forbidden"}}
	deleted, kept := KeepData(orphans, data)
	if got, want := names(deleted), []string{"CustomResourceDefinition empty.kubevirt.io", "ClusterRole old-role"}; !reflect.DeepEqual(got, want) {
		t.Errorf("deleted %v, want %v", got, want)
	}
	if got, want := names(kept), []string{"CustomResourceDefinition held.kubevirt.io", "CustomResourceDefinition unknown.kubevirt.io",
		"CustomResourceDefinition uncounted.kubevirt.io"}; !reflect.DeepEqual(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
}

// DataOf reads a CRD's retention and the CR's annotation; a recorded count
// that is no count is none.
func TestDataOf(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "plugins.plugin.kubevirt.io",
		Annotations: map[string]string{metadata.RetainedAnnotation: "3 Plugins; not in deployment x", metadata.RetainedCountAnnotation: "3"}}}
	count := func(string) (int, string, string) { return 2, "2 Plugins", "" }
	named := DeleteRetainedNames(map[string]string{metadata.DeleteRetainedAnnotation: " other.kubevirt.io , plugins.plugin.kubevirt.io,"})
	d := DataOf(crd, count, named)
	if !d.Retained || d.Recorded == nil || *d.Recorded != 3 || !d.Named || d.Objects != 2 || d.Held != "2 Plugins" {
		t.Fatalf("%+v", d)
	}
	crd.Annotations[metadata.RetainedCountAnnotation] = "many"
	if d := DataOf(crd, count, nil); d.Recorded != nil || d.Named {
		t.Fatalf("%+v: want no count recorded, not named", d)
	}
}

func TestWithoutDeleteRetained(t *testing.T) {
	for value, want := range map[string]string{
		"plugins.plugin.kubevirt.io":                    "",
		" a.kubevirt.io, plugins.plugin.kubevirt.io ,b": "a.kubevirt.io,b",
		"a.kubevirt.io":                                 "a.kubevirt.io",
	} {
		if got := WithoutDeleteRetained(value, "plugins.plugin.kubevirt.io"); got != want {
			t.Errorf("%q: %q, want %q", value, got, want)
		}
	}
}
