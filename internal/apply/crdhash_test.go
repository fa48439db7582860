package apply

import (
	"runtime"
	"testing"
	"weak"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The remembered digest is the one computed afresh, and follows every part of
// the content outside the shared versions array.
func TestHashCRDRemembersOnlyWhatItCovers(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things.example.io", Labels: map[string]string{"a": "1"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.io", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "things", Kind: "Thing"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}}},
	}
	fresh := func(c *apiextensionsv1.CustomResourceDefinition) string {
		t.Helper()
		crdHashes.mu.Lock()
		crdHashes.m = map[crdHashKey]string{}
		crdHashes.mu.Unlock()
		h, err := hashCRD(c)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	remembered := func(c *apiextensionsv1.CustomResourceDefinition) string {
		t.Helper()
		h, err := hashCRD(c)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	want := fresh(crd)
	if got := remembered(crd); got != want {
		t.Errorf("remembered %s, fresh %s", got, want)
	}
	if got := remembered(crd.DeepCopy()); got != want {
		t.Errorf("a deep copy (another array, the same content): %s, want %s", got, want)
	}
	// Copies that share the versions array, as copyObject's do, but differ elsewhere.
	for name, change := range map[string]func(*apiextensionsv1.CustomResourceDefinition){
		"a label":        func(c *apiextensionsv1.CustomResourceDefinition) { c.Labels = map[string]string{"a": "2"} },
		"the scope":      func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Scope = apiextensionsv1.ClusterScoped },
		"fewer versions": func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions = c.Spec.Versions[:0] },
	} {
		shallow := copyObject(crd).(*apiextensionsv1.CustomResourceDefinition)
		change(shallow)
		got := remembered(shallow)
		if got == want || got != fresh(shallow) {
			t.Errorf("%s: %s (the original's %s, fresh %s)", name, got, want, fresh(shallow))
		}
		remembered(crd) // the original back in the memo
	}
	// Server-set fields and the stamp itself are not content.
	live := crd.DeepCopy()
	live.ResourceVersion, live.Generation = "7", 3
	live.Annotations = map[string]string{DesiredHashAnnotation: want}
	if got := remembered(live); got != want {
		t.Errorf("a live copy: %s, want %s", got, want)
	}
}

// BenchmarkHashCRD is a pass's cost of hashing a CRD with a megabyte of schema
// once its strategy has been hashed.
// The memo does not keep a hashed CRD's schemas alive.
func TestHashCRDHoldsNoSchema(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "gone.example.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1"}}}}
	if _, err := hashCRD(crd); err != nil {
		t.Fatal(err)
	}
	versions := weak.Make(&crd.Spec.Versions[0])
	crd = nil
	runtime.GC()
	if versions.Value() != nil {
		t.Error("the versions array of a CRD nothing holds outlived a collection: the memo keeps it")
	}
}

func BenchmarkHashCRD(b *testing.B) {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "things.example.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1",
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Description: string(make([]byte, 1<<20))}}}}}}}}
	if _, err := hashCRD(crd); err != nil { // the first pass of a strategy marshals it
		b.Fatal(err)
	}
	for b.Loop() { // every later pass
		if _, err := hashCRD(copyObject(crd).(*apiextensionsv1.CustomResourceDefinition)); err != nil {
			b.Fatal(err)
		}
	}
}
