package storedversions

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func export(version, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"source": map[string]any{"kind": "VirtualMachine", "name": name}}}}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "export.kubevirt.io", Version: version, Kind: "VirtualMachineExport"})
	u.SetNamespace("default")
	u.SetName(name)
	return u
}

func exportMetadata(name string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	m.SetGroupVersionKind(schema.GroupVersionKind{Group: "export.kubevirt.io", Version: "v1beta1", Kind: "VirtualMachineExport"})
	return m
}

func newClient(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) client.WithWatch {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&apiextensionsv1.CustomResourceDefinition{}).Build(), funcs)
}

func TestRead(t *testing.T) {
	live := crd([]string{"v1"}, "v1beta1", "v1*")
	desired := []*apiextensionsv1.CustomResourceDefinition{crd(nil, "v1alpha1", "v1beta1*"), {}}
	desired[1].Name = "absent.kubevirt.io"
	c := newClient(t, interceptor.Funcs{}, live, exportMetadata("a"), exportMetadata("b")) // the fake lists metadata of metadata only
	got, err := Read(context.Background(), c, desired)
	if err != nil || len(got) != 1 || got[0].Action != Rewrite || got[0].Objects != 2 {
		t.Fatalf("%+v, %v: want one decision, a rewrite of 2 objects", got, err)
	}
	broken := newClient(t, interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return apierrors.NewForbidden(schema.GroupResource{Group: "export.kubevirt.io", Resource: "virtualmachineexports"}, "", errors.New("no"))
	}}, live)
	if _, err := Read(context.Background(), broken, desired); err == nil || !apierrors.IsForbidden(errors.Unwrap(err)) {
		t.Fatalf("a count that fails: %v, want the error, wrapped", err)
	}
	// A count fails closed: 0 would retire a version objects may be stored in.
	if n, err := Count(context.Background(), c, crd(nil, "-v1")); err == nil {
		t.Fatalf("a CRD that serves nothing: %d, %v: want an error", n, err)
	}
	notServed := newClient(t, interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return apierrors.NewNotFound(schema.GroupResource{Group: "export.kubevirt.io", Resource: "virtualmachineexports"}, "")
	}}, live)
	if d, err := Read(context.Background(), notServed, desired); err == nil || !apierrors.IsNotFound(errors.Unwrap(err)) {
		t.Fatalf("a 404 for a version the CRD serves: %+v, %v: want the error, never a count of 0 (a retire)", d, err)
	}
}

// Every object is updated once, unchanged, page by page; a conflict is read
// again and retried; an object deleted meanwhile is skipped.
func TestRewriteObjects(t *testing.T) {
	objs := []client.Object{export("v1beta1", "a"), export("v1beta1", "b"), export("v1beta1", "c")}
	updated := map[string]int{}
	conflicted := false
	pages := 0
	c := newClient(t, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			lo := (&client.ListOptions{}).ApplyOptions(opts)
			if lo.Limit != pageSize {
				t.Errorf("listed with limit %d, want %d", lo.Limit, pageSize)
			}
			if err := c.List(ctx, list, opts...); err != nil {
				return err
			}
			pages++
			u := list.(*unstructured.UnstructuredList)
			if lo.Continue == "" { // the fake client does not page: two pages by hand
				u.Items = u.Items[:2]
				u.SetContinue("page-2")
			} else {
				u.Items = u.Items[2:]
			}
			return nil
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			switch {
			case obj.GetName() == "a" && !conflicted:
				conflicted = true
				return apierrors.NewConflict(schema.GroupResource{Resource: "virtualmachineexports"}, "a", errors.New("changed"))
			case obj.GetName() == "c":
				return apierrors.NewNotFound(schema.GroupResource{Resource: "virtualmachineexports"}, "c")
			}
			updated[obj.GetName()]++
			if obj.GetObjectKind().GroupVersionKind().Version != "v1beta1" {
				t.Errorf("%s written as %s", obj.GetName(), obj.GetObjectKind().GroupVersionKind())
			}
			return c.Update(ctx, obj, opts...)
		},
	}, objs...)
	target := crd(nil, "v1alpha1", "v1beta1*")
	target.Spec.Names.ListKind = "" // as the releases' CRDs have it: the API server defaults it
	n, err := RewriteObjects(context.Background(), c, target, "v1beta1")
	if err != nil || n != 3 || pages != 2 || updated["a"] != 1 || updated["b"] != 1 || !conflicted {
		t.Fatalf("rewrote %d in %d pages (%v, updates %v, conflicted %v): want 3 in 2 pages, a and b once, a after its conflict", n, pages, err, updated, conflicted)
	}

	refused := newClient(t, interceptor.Funcs{Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
		return apierrors.NewBadRequest("denied by a webhook")
	}}, export("v1beta1", "a"))
	if _, err := RewriteObjects(context.Background(), refused, crd(nil, "v1beta1*"), "v1beta1"); err == nil ||
		err.Error() != "rewriting VirtualMachineExport default/a as v1beta1: denied by a webhook" {
		t.Fatalf("a refused update: %v, want it named", err)
	}
}

func TestTrim(t *testing.T) {
	live := crd([]string{"v1", "v1beta1"}, "v1beta1*", "-v1")
	c := newClient(t, interceptor.Funcs{}, live)
	if err := Trim(context.Background(), c, c, live.Name, []string{"v1"}); err != nil {
		t.Fatal(err)
	}
	got := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(live), got); err != nil || len(got.Status.StoredVersions) != 1 || got.Status.StoredVersions[0] != "v1beta1" {
		t.Fatalf("stored versions %v (%v), want [v1beta1]", got.Status.StoredVersions, err)
	}
	if err := Trim(context.Background(), c, c, "absent.kubevirt.io", []string{"v1"}); !apierrors.IsNotFound(err) {
		t.Fatalf("an absent CRD: %v", err)
	}
}

func TestStorageVersionHash(t *testing.T) {
	// What any API server's discovery reports for apps/v1 deployments.
	if got := StorageVersionHash("apps", "v1", "Deployment"); got != "8aSe+NMegvE=" {
		t.Fatalf("hash %q", got)
	}
}

// The rewrite waits until discovery reports the bridge's storage version;
// a CRD that never switches fails, naming what discovery reported.
func TestWaitStored(t *testing.T) {
	exports := crd(nil, "v1alpha1", "v1beta1*")
	calls := 0
	switching := func(gv string) (*metav1.APIResourceList, error) {
		calls++
		if gv != "export.kubevirt.io/v1beta1" {
			t.Errorf("discovery read for %s", gv)
		}
		hash := StorageVersionHash("export.kubevirt.io", "v1", "VirtualMachineExport")
		if calls >= 3 {
			hash = StorageVersionHash("export.kubevirt.io", "v1beta1", "VirtualMachineExport")
		}
		return &metav1.APIResourceList{APIResources: []metav1.APIResource{{Name: "other"}, {Name: "virtualmachineexports", StorageVersionHash: hash}}}, nil
	}
	if err := WaitStored(context.Background(), switching, exports, "v1beta1", time.Minute); err != nil || calls != 3 {
		t.Fatalf("%v after %d reads: want it done at the third", err, calls)
	}
	never := func(string) (*metav1.APIResourceList, error) {
		return &metav1.APIResourceList{APIResources: []metav1.APIResource{{Name: "virtualmachineexports", StorageVersionHash: "old"}}}, nil
	}
	err := WaitStored(context.Background(), never, exports, "v1beta1", 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), `CRD virtualmachineexports.export.kubevirt.io stored as v1beta1 yet (storage version hash "old"`) {
		t.Fatalf("a storage version that never switches: %v", err)
	}
}
