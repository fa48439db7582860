package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/storedversions"
)

// A CRD shaped like the exports of a v1.9.0 -> v1.8.4 rollback, against a
// real API server: objects stored as v1; the target serves v1alpha1 and
// v1beta1 only. The API server refuses the target CRD as it is; the bridge,
// the wait for the storage switch, the rewrite and the trim let it through,
// and every object reads back with its content.
func TestStoredVersionsRewrite(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t, ctx, "storedversions")
	const group, kind = "svtest.kubevirt.io", "Widget"
	version := func(name string, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: true, Storage: storage,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)}}}}}
	}
	crd := func(versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Scope: apiextensionsv1.NamespaceScoped, Versions: versions,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: "widgets", Singular: "widget"}}}
	}
	live := crd(version("v1beta1", false), version("v1", true))
	if err := k8s.Create(ctx, live); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), live) })
	widget := func(v, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(len(name))}}}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: v, Kind: kind})
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	names := []string{"a", "bb", "ccc"}
	for _, name := range names {
		eventually(t, "created widget "+name, waitTimeout, func() bool { return k8s.Create(ctx, widget("v1", name)) == nil })
	}

	desired := crd(version("v1alpha1", false), version("v1beta1", true))
	refused := desired.DeepCopy()
	refused.ResourceVersion = getCRD(t, live.Name).ResourceVersion
	if err := k8s.Update(ctx, refused); !apierrors.IsInvalid(err) {
		t.Fatalf("the target CRD written as it is: %v, want refused (v1 is a stored version)", err)
	}

	decisions, err := storedversions.Read(ctx, k8s, []*apiextensionsv1.CustomResourceDefinition{desired})
	if err != nil || len(decisions) != 1 || decisions[0].Action != storedversions.Rewrite || decisions[0].Via != "v1beta1" || decisions[0].Objects != 3 {
		t.Fatalf("decisions %+v (%v): want a rewrite of 3 objects as v1beta1", decisions, err)
	}
	d := decisions[0]
	current := getCRD(t, live.Name)
	bridge := storedversions.Bridge(desired, current, d)
	bridge.ResourceVersion = current.ResourceVersion
	if err := k8s.Update(ctx, bridge); err != nil {
		t.Fatalf("the bridge: %v", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := storedversions.WaitStored(ctx, dc.ServerResourcesForGroupVersion, desired, d.Via, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, err := storedversions.RewriteObjects(ctx, k8s, desired, d.Via); err != nil || n != 3 {
		t.Fatalf("rewrote %d (%v), want 3", n, err)
	}
	if err := storedversions.Trim(ctx, k8s, k8s, desired.Name, d.Retired); err != nil {
		t.Fatal(err)
	}
	if stored := getCRD(t, live.Name).Status.StoredVersions; slices.Contains(stored, "v1") {
		t.Fatalf("stored versions after the trim: %v", stored)
	}
	final := desired.DeepCopy()
	final.ResourceVersion = getCRD(t, live.Name).ResourceVersion
	if err := k8s.Update(ctx, final); err != nil {
		t.Fatalf("the target CRD after the rewrite: %v", err)
	}
	for _, name := range names {
		got := widget("v1beta1", name)
		eventually(t, "widget "+name+" read as v1beta1", waitTimeout, func() bool {
			return k8s.Get(ctx, client.ObjectKeyFromObject(got), got) == nil
		})
		if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != int64(len(name)) {
			t.Errorf("widget %s: spec %v, want size %d", name, got.Object["spec"], len(name))
		}
	}
}

func getCRD(t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
		t.Fatal(fmt.Errorf("reading CRD %s: %w", name, err))
	}
	return crd
}

// eventually polls ok until it holds (a CRD just written is served a moment later).
func eventually(t *testing.T, what string, timeout time.Duration, ok func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return ok(), nil })
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
