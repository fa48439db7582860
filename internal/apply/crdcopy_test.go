package apply

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "virtualmachines.kubevirt.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "kubevirt.io", Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
			Name: "v1", Served: true, Storage: true,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object"}}}},
		}}},
	}
}

// CRDs share their spec between the strategy and its customized, injected and
// stamped copies: none of those steps may write into the strategy's CRD.
func TestCRDCopiesLeaveTheStrategyAlone(t *testing.T) {
	s := testStrategy(t)
	if err := s.Add(testCRD()); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, s)
	cfg := testConfig(t, nil)
	customized, err := Customize(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	desired := Desired(customized, cfg)
	actions := Plan(desired.Objects(), nil, nil)
	if after := snapshot(t, s); after != before {
		t.Fatalf("the strategy changed:\n%s\n%s", before, after)
	}
	var stamped *apiextensionsv1.CustomResourceDefinition
	for _, a := range actions {
		if crd, ok := a.Object.(*apiextensionsv1.CustomResourceDefinition); ok {
			stamped = crd
		}
	}
	if stamped == nil || stamped.Annotations[DesiredHashAnnotation] == "" || stamped.Labels["app.kubernetes.io/managed-by"] == "" {
		t.Fatalf("the planned CRD lacks the operator's metadata: %+v", stamped)
	}
}

func TestHashCRD(t *testing.T) {
	base, err := Hash(testCRD())
	if err != nil {
		t.Fatal(err)
	}
	live := testCRD()
	live.ResourceVersion, live.UID, live.Generation = "42", "uid", 3
	live.CreationTimestamp = metav1.Now()
	live.Annotations = map[string]string{DesiredHashAnnotation: "whatever"}
	live.Status.StoredVersions = []string{"v1"}
	if h, _ := Hash(live); h != base {
		t.Errorf("server-set fields, status and the hash annotation change the hash: %s != %s", h, base)
	}
	changed := testCRD()
	changed.Spec.Versions[0].Served = false
	if h, _ := Hash(changed); h == base {
		t.Error("a spec change keeps the hash")
	}
	labelled := testCRD()
	labelled.Labels = map[string]string{"a": "b"}
	if h, _ := Hash(labelled); h == base {
		t.Error("a label change keeps the hash")
	}
}
