package cli

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/virt-operator/virt-operator/internal/strategy"
)

func TestPlanRefusesBadInput(t *testing.T) {
	out, err := runCommand(t, NewPlanCommand())
	assertUsageError(t, out, err, "-f KUBEVIRT.yaml is required")
	out, err = runCommand(t, NewPlanCommand(), "-f", "/nonexistent/kubevirt.yaml")
	assertUsageError(t, out, err, "/nonexistent/kubevirt.yaml")
}

func TestStoredVersionsCheck(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	live := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "things.kubevirt.io"},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1alpha3", "v1"}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(live).Build()
	crd := func(versions ...string) *strategy.Strategy {
		want := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "things.kubevirt.io"}}
		for _, v := range versions {
			want.Spec.Versions = append(want.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true})
		}
		return &strategy.Strategy{CRDs: []*apiextensionsv1.CustomResourceDefinition{want}}
	}
	if got := storedVersionsCheck(context.Background(), c, crd("v1alpha3", "v1")); !got.OK {
		t.Fatalf("both versions served: %+v", got)
	}
	got := storedVersionsCheck(context.Background(), c, crd("v1"))
	if got.OK || !strings.Contains(got.Message, "stored as v1alpha3, which the target no longer serves") {
		t.Fatalf("a dropped stored version: %+v", got)
	}
}
