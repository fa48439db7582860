package kubevirt

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// A gate turned off or a rollback leaves CRDs the target no longer has: one
// with user objects is kept (annotated, named by DataRetained and a Warning),
// an empty one is deleted; the kept one goes once the CR's annotation names it,
// and is the deployment's own again when a target has it.
func TestOrphanedCRDsWithDataAreKept(t *testing.T) {
	templateGVK := schema.GroupVersionKind{Group: "template.kubevirt.io", Version: "v1alpha1", Kind: "VirtualMachineTemplate"}
	emptyGVK := schema.GroupVersionKind{Group: "plugin.kubevirt.io", Version: "v1alpha1", Kind: "Plugin"}
	managed := map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}
	crd := func(name string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: managed}}
	}
	template := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "fedora"}}
	template.SetGroupVersionKind(templateGVK)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(templateGVK, meta.RESTScopeNamespace)
	mapper.Add(emptyGVK, meta.RESTScopeRoot)
	kept := crd("virtualmachinetemplates.template.kubevirt.io")
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithRESTMapper(mapper).
		WithObjects(kept, crd("plugins.plugin.kubevirt.io"), template).Build()
	r := &Reconciler{Client: c, APIReader: c, Namespace: "kubevirt"}
	desired := &strategy.Strategy{}
	if err := desired.Add(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt-handler"}}); err != nil {
		t.Fatal(err)
	}
	kv := &v1.KubeVirt{}
	s := &scope{kv: kv, cfg: &deployid.Config{ID: "new"}, target: &deployment{desired: desired, strategy: desired}}
	ctx := context.Background()
	if err := r.deleteOrphans(ctx, s); err != nil {
		t.Fatal(err)
	}
	got := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(kept), got); err != nil {
		t.Fatalf("the CRD holding a VirtualMachineTemplate was deleted: %v", err)
	}
	if why := got.Annotations[metadata.RetainedAnnotation]; why != "1 VirtualMachineTemplates; not in deployment new" {
		t.Fatalf("retained annotation %q", why)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "plugins.plugin.kubevirt.io"}, &apiextensionsv1.CustomResourceDefinition{}); err == nil {
		t.Fatal("the empty CRD was kept")
	}
	warned := false
	for _, e := range s.Events {
		warned = warned || (e.Type == eventWarning && e.Reason == ReasonCRDsRetained && strings.Contains(e.Message, "1 VirtualMachineTemplates"))
	}
	cond := retainedCondition(s.retained)
	if !warned || cond == nil || !strings.Contains(cond.Message, "virtualmachinetemplates.template.kubevirt.io (1 VirtualMachineTemplates") {
		t.Fatalf("events %+v, condition %+v", s.Events, cond)
	}

	// Every later pass still names it.
	next := &scope{kv: kv, cfg: s.cfg}
	if err := r.observeRetained(ctx, next); err != nil || len(next.retained) != 1 {
		t.Fatalf("a later pass: %v, retained %+v", err, next.retained)
	}
	// A target that has it again takes it back.
	back := &strategy.Strategy{}
	if err := back.Add(crd(kept.Name)); err != nil {
		t.Fatal(err)
	}
	again := &scope{kv: kv, cfg: s.cfg, target: &deployment{strategy: back}}
	if err := r.observeRetained(ctx, again); err != nil || len(again.retained) != 0 {
		t.Fatalf("with a target that has it: %v, retained %+v", err, again.retained)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(kept), got); err != nil || got.Annotations[metadata.RetainedAnnotation] != "" {
		t.Fatalf("not released: %v, annotations %v", err, got.Annotations)
	}
	// Retained again, then deleted as the CR's annotation asks.
	if err := r.annotateRetained(ctx, kept.Name, ptrTo("1 VirtualMachineTemplates; not in deployment new")); err != nil {
		t.Fatal(err)
	}
	kv.Annotations = map[string]string{metadata.DeleteRetainedAnnotation: "other.example.com, " + kept.Name}
	last := &scope{kv: kv, cfg: s.cfg}
	if err := r.observeRetained(ctx, last); err != nil || len(last.retained) != 0 {
		t.Fatalf("allowed: %v, retained %+v", err, last.retained)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(kept), got); err == nil {
		t.Fatal("the CRD the annotation names is still there")
	}
}

func ptrTo[T any](v T) *T { return &v }
