package kubevirt

import (
	"context"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/storedversions"
)

// A rollback whose CRD no longer serves a version the cluster stored: with no
// objects, the version is retired (the storage version moved first, then
// status.storedVersions trimmed); with objects, they are rewritten in a version
// both serve first; with objects and no version in common, the update is
// refused naming the CRD.
func TestMigrateStoredVersions(t *testing.T) {
	version := func(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}
	}
	crd := func(versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "virtualmachineexports.export.kubevirt.io",
			Labels: map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "export.kubevirt.io", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "VirtualMachineExport", ListKind: "VirtualMachineExportList", Plural: "virtualmachineexports"}, Versions: versions}}
	}
	live := crd(version("v1beta1", false), version("v1", true))
	live.Status.StoredVersions = []string{"v1"}
	desired := crd(version("v1alpha1", false), version("v1beta1", true))
	run := func(objs ...client.Object) (*apiextensionsv1.CustomResourceDefinition, *scope, error) {
		c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(append([]client.Object{live.DeepCopy()}, objs...)...).
			WithStatusSubresource(&apiextensionsv1.CustomResourceDefinition{}).Build()
		r := &Reconciler{Client: c, APIReader: c}
		s := &scope{kv: &v1.KubeVirt{}}
		writes := apply.Plan([]client.Object{desired}, map[apply.ObjectRef]client.Object{apply.RefOf(live): live.DeepCopy()}, nil)
		err := r.migrateStoredVersions(context.Background(), s, writes)
		got := &apiextensionsv1.CustomResourceDefinition{}
		if getErr := c.Get(context.Background(), client.ObjectKeyFromObject(live), got); getErr != nil {
			t.Fatal(getErr)
		}
		return got, s, err
	}
	got, s, err := run()
	if err != nil || slices.Contains(got.Status.StoredVersions, "v1") || len(s.Events) != 1 {
		t.Fatalf("no objects: %v, stored versions %v, events %+v: want v1 retired", err, got.Status.StoredVersions, s.Events)
	}
	if v := got.Spec.Versions[len(got.Spec.Versions)-1]; v.Name != "v1" || v.Served || v.Storage {
		t.Fatalf("the bridge left versions %+v: want v1 listed, neither served nor storage", got.Spec.Versions)
	}
	export := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "e", ResourceVersion: "5"}}
	export.SetGroupVersionKind(schema.GroupVersionKind{Group: "export.kubevirt.io", Version: "v1beta1", Kind: "VirtualMachineExport"})
	got, s, err = run(export)
	if err != nil || slices.Contains(got.Status.StoredVersions, "v1") || len(s.Events) != 1 ||
		!strings.Contains(s.Events[0].Message, "1 VirtualMachineExports rewritten as v1beta1, versions v1 retired") {
		t.Fatalf("with an export: %v, stored versions %v, events %+v: want it rewritten as v1beta1, v1 retired", err, got.Status.StoredVersions, s.Events)
	}
	desired = crd(version("v2", true)) // no version in common with the live CRD
	got, _, err = run(export)
	if err == nil || !strings.Contains(err.Error(), "CRD virtualmachineexports.export.kubevirt.io: stored versions v1 are not served by the target") ||
		!strings.Contains(err.Error(), "1 objects") || !slices.Contains(got.Status.StoredVersions, "v1") {
		t.Fatalf("no version in common: %v, stored versions %v: want refused, nothing changed", err, got.Status.StoredVersions)
	}
}

// Retiring a stored version (no objects counted) waits for the storage switch
// as a rewrite does, then rewrites whatever it finds: an export created
// between the count and the switch is stored in the retired version, and
// would make the whole kind unreadable once the target drops it.
func TestRetireWaitsForTheStorageSwitch(t *testing.T) {
	version := func(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}
	}
	crd := func(versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "virtualmachineexports.export.kubevirt.io",
			Labels: map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "export.kubevirt.io", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "VirtualMachineExport", ListKind: "VirtualMachineExportList", Plural: "virtualmachineexports"}, Versions: versions}}
	}
	live := crd(version("v1beta1", false), version("v1", true))
	live.Status.StoredVersions = []string{"v1"}
	desired := crd(version("v1alpha1", false), version("v1beta1", true))
	var steps []string
	bridged := false
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(live.DeepCopy()).
		WithStatusSubresource(&apiextensionsv1.CustomResourceDefinition{}).Build(), interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if err := c.Apply(ctx, obj, opts...); err != nil || bridged {
				return err
			}
			bridged = true
			steps = append(steps, "bridge")
			// An export created after the count, before the storage switch.
			export := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "late"}}
			export.SetGroupVersionKind(schema.GroupVersionKind{Group: "export.kubevirt.io", Version: "v1beta1", Kind: "VirtualMachineExport"})
			return c.Create(ctx, export)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			steps = append(steps, "rewrite "+obj.GetName())
			return c.Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, subResource string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			steps = append(steps, "trim")
			return c.SubResource(subResource).Patch(ctx, obj, patch, opts...)
		},
	})
	r := &Reconciler{Client: c, APIReader: c, Resources: func(groupVersion string) (*metav1.APIResourceList, error) {
		steps = append(steps, "wait "+groupVersion)
		return &metav1.APIResourceList{GroupVersion: groupVersion, APIResources: []metav1.APIResource{{Name: "virtualmachineexports",
			StorageVersionHash: storedversions.StorageVersionHash("export.kubevirt.io", "v1beta1", "VirtualMachineExport")}}}, nil
	}}
	s := &scope{kv: &v1.KubeVirt{}}
	writes := apply.Plan([]client.Object{desired}, map[apply.ObjectRef]client.Object{apply.RefOf(live): live.DeepCopy()}, nil)
	if err := r.migrateStoredVersions(context.Background(), s, writes); err != nil {
		t.Fatal(err)
	}
	if want := []string{"bridge", "wait export.kubevirt.io/v1beta1", "rewrite late", "trim"}; !slices.Equal(steps, want) {
		t.Fatalf("steps %v, want %v: the storage switch waited for, the late export rewritten, then the trim", steps, want)
	}
	if len(s.Events) != 1 || !strings.Contains(s.Events[0].Message, "1 VirtualMachineExports rewritten as v1beta1, versions v1 retired") {
		t.Fatalf("events %+v", s.Events)
	}
}
