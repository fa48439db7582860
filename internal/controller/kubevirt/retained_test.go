package kubevirt

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/preflight"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

var (
	templateGVK = schema.GroupVersionKind{Group: "template.kubevirt.io", Version: "v1alpha1", Kind: "VirtualMachineTemplate"}
	pluginGVK   = schema.GroupVersionKind{Group: "plugin.kubevirt.io", Version: "v1alpha1", Kind: "Plugin"}
)

const templatesCRD = "virtualmachinetemplates.template.kubevirt.io"

// userCRD is a managed CRD of gvk, serving its version, with annotations.
func userCRD(gvk schema.GroupVersionKind, plural string, scope apiextensionsv1.ResourceScope, annotations map[string]string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + gvk.Group, Annotations: annotations,
			Labels: map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: gvk.Group, Scope: scope,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Kind: gvk.Kind, Plural: plural},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: gvk.Version, Served: true, Storage: true}}},
	}
}

func templatesCRDWith(annotations map[string]string) *apiextensionsv1.CustomResourceDefinition {
	return userCRD(templateGVK, "virtualmachinetemplates", apiextensionsv1.NamespaceScoped, annotations)
}

func userObject(gvk schema.GroupVersionKind, namespace, name string) client.Object {
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	o.SetGroupVersionKind(gvk)
	return o
}

// retainedCRD is the templates' CRD as a retention of count templates left it.
func retainedTemplatesCRD(count string) *apiextensionsv1.CustomResourceDefinition {
	annotations := map[string]string{metadata.RetainedAnnotation: count + " VirtualMachineTemplates; not in deployment old"}
	if count != "" {
		annotations[metadata.RetainedCountAnnotation] = count
	}
	return templatesCRDWith(annotations)
}

// retainEnv is a KubeVirt CR (annotated), in a fake client with objs, and a
// Reconciler reading it.
type retainEnv struct {
	c  client.WithWatch
	r  *Reconciler
	kv *v1.KubeVirt
}

func newRetainEnv(t *testing.T, deleteRetained string, funcs interceptor.Funcs, objs ...client.Object) *retainEnv {
	t.Helper()
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt"}}
	if deleteRetained != "" {
		kv.Annotations = map[string]string{metadata.DeleteRetainedAnnotation: deleteRetained}
	}
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(append(objs, kv)...).Build(), funcs)
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(kv), kv); err != nil {
		t.Fatal(err)
	}
	return &retainEnv{c: c, r: &Reconciler{Client: c, APIReader: c, Namespace: "kubevirt"}, kv: kv}
}

// orphanScope is a pass whose target has none of the CRDs.
func (e *retainEnv) orphanScope(t *testing.T) *scope {
	t.Helper()
	desired := &strategy.Strategy{}
	if err := desired.Add(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt-handler"}}); err != nil {
		t.Fatal(err)
	}
	return &scope{kv: e.kv, cfg: &deployid.Config{ID: "new"}, target: &deployment{desired: desired, strategy: desired}}
}

func (e *retainEnv) crd(t *testing.T, name string) (*apiextensionsv1.CustomResourceDefinition, bool) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	err := e.c.Get(context.Background(), client.ObjectKey{Name: name}, crd)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	return crd, err == nil
}

// deleteRetained is the live CR's DeleteRetainedAnnotation.
func (e *retainEnv) deleteRetained(t *testing.T) (string, bool) {
	t.Helper()
	kv := &v1.KubeVirt{}
	if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(e.kv), kv); err != nil {
		t.Fatal(err)
	}
	v, ok := kv.Annotations[metadata.DeleteRetainedAnnotation]
	return v, ok
}

func warned(s *scope, reason, text string) bool {
	for _, e := range s.Events {
		if e.Type == eventWarning && e.Reason == reason && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

// A gate turned off or a rollback leaves CRDs the target no longer has: one
// with user objects is kept (annotated with what it holds and how many,
// named by DataRetained and a Warning), an empty one is deleted; the kept one
// goes once the CR's annotation names it, which then loses the name, and is
// the deployment's own again when a target has it.
func TestOrphanedCRDsWithDataAreKept(t *testing.T) {
	e := newRetainEnv(t, "", interceptor.Funcs{}, templatesCRDWith(nil), userCRD(pluginGVK, "plugins", apiextensionsv1.ClusterScoped, nil),
		userObject(templateGVK, "team-a", "fedora"))
	ctx := context.Background()
	s := e.orphanScope(t)
	if err := e.r.deleteOrphans(ctx, s); err != nil {
		t.Fatal(err)
	}
	got, ok := e.crd(t, templatesCRD)
	if !ok {
		t.Fatal("the CRD holding a VirtualMachineTemplate was deleted")
	}
	if why, n := got.Annotations[metadata.RetainedAnnotation], got.Annotations[metadata.RetainedCountAnnotation]; why != "1 VirtualMachineTemplates; not in deployment new" || n != "1" {
		t.Fatalf("retained annotations %q, count %q", why, n)
	}
	if _, ok := e.crd(t, "plugins.plugin.kubevirt.io"); ok {
		t.Fatal("the empty CRD was kept")
	}
	cond := retainedCondition(s.retained.crds)
	if !warned(s, ReasonCRDsRetained, "1 VirtualMachineTemplates") || cond == nil || !strings.Contains(cond.Message, templatesCRD+" (1 VirtualMachineTemplates") {
		t.Fatalf("events %+v, condition %+v", s.Events, cond)
	}

	// Every later pass still names it.
	next := &scope{kv: e.kv, cfg: s.cfg}
	if err := e.r.observeRetained(ctx, next); err != nil || len(next.retained.crds) != 1 {
		t.Fatalf("a later pass: %v, retained %+v", err, next.retained)
	}
	// A target that has it again takes it back.
	back := &strategy.Strategy{}
	if err := back.Add(templatesCRDWith(nil)); err != nil {
		t.Fatal(err)
	}
	again := &scope{kv: e.kv, cfg: s.cfg, target: &deployment{strategy: back}}
	if err := e.r.observeRetained(ctx, again); err != nil || len(again.retained.crds) != 0 {
		t.Fatalf("with a target that has it: %v, retained %+v", err, again.retained)
	}
	if got, _ := e.crd(t, templatesCRD); len(got.Annotations) != 0 {
		t.Fatalf("not released: annotations %v", got.Annotations)
	}
	// Retained again, then deleted as the CR's annotation asks, which loses the name.
	if err := e.r.deleteOrphans(ctx, e.orphanScope(t)); err != nil {
		t.Fatal(err)
	}
	e.kv.Annotations = map[string]string{metadata.DeleteRetainedAnnotation: "other.example.com, " + templatesCRD}
	if err := e.c.Update(ctx, e.kv); err != nil {
		t.Fatal(err)
	}
	last := &scope{kv: e.kv, cfg: s.cfg}
	if err := e.r.observeRetained(ctx, last); err != nil || len(last.retained.crds) != 0 {
		t.Fatalf("named: %v, retained %+v", err, last.retained)
	}
	if _, ok := e.crd(t, templatesCRD); ok {
		t.Fatal("the CRD the annotation names is still there")
	}
	if v, _ := e.deleteRetained(t); v != "other.example.com" || !warned(last, "RetainedCRDDeleted", "1 VirtualMachineTemplates") {
		t.Fatalf("the annotation is %q after use, events %+v: want the other name alone, and a Warning", v, last.Events)
	}
}

// The annotation left over from an earlier clean-up (an older operator never
// removed it) names a CRD that was never retained: the CRD, holding data, is
// retained, not deleted, and the retention removes the name, so no later pass
// deletes it either.
func TestALeftOverDeleteAnnotationDeletesNoCRDRetainedLater(t *testing.T) {
	e := newRetainEnv(t, templatesCRD, interceptor.Funcs{}, templatesCRDWith(nil), userObject(templateGVK, "team-a", "fedora"))
	ctx := context.Background()
	s := e.orphanScope(t)
	if err := e.r.deleteOrphans(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got, ok := e.crd(t, templatesCRD); !ok || got.Annotations[metadata.RetainedCountAnnotation] != "1" {
		t.Fatalf("the CRD named before it was retained: exists %v, annotations %v; want it retained with its count", ok, got.Annotations)
	}
	if v, ok := e.deleteRetained(t); ok {
		t.Fatalf("the annotation still names it (%q) after the retention", v)
	}
	later := &scope{kv: e.kv, cfg: s.cfg}
	if err := e.r.observeRetained(ctx, later); err != nil || len(later.retained.crds) != 1 {
		t.Fatalf("a later pass: %v, retained %+v", err, later.retained)
	}
	if _, ok := e.crd(t, templatesCRD); !ok {
		t.Fatal("a later pass deleted it")
	}
}

// A retained CRD named by the annotation but holding more objects than its
// retention recorded (or with no count recorded, retained by an older
// operator) is kept: the admin confirmed deleting fewer. The count is recorded
// anew and the name removed, with a Warning; named again, it goes.
func TestADeleteAnnotationConfirmsOnlyTheRecordedCount(t *testing.T) {
	for _, recorded := range []string{"1", ""} {
		t.Run("recorded "+recorded, func(t *testing.T) {
			e := newRetainEnv(t, templatesCRD, interceptor.Funcs{}, retainedTemplatesCRD(recorded),
				userObject(templateGVK, "team-a", "fedora"), userObject(templateGVK, "team-b", "centos"))
			ctx := context.Background()
			s := &scope{kv: e.kv, cfg: &deployid.Config{ID: "new"}}
			if err := e.r.observeRetained(ctx, s); err != nil {
				t.Fatal(err)
			}
			got, ok := e.crd(t, templatesCRD)
			if !ok {
				t.Fatal("deleted a CRD holding more objects than the annotation confirmed")
			}
			if n, why := got.Annotations[metadata.RetainedCountAnnotation], got.Annotations[metadata.RetainedAnnotation]; n != "2" || why != "2 VirtualMachineTemplates; not in deployment old" {
				t.Fatalf("count %q, annotation %q: want the new count recorded", n, why)
			}
			if v, named := e.deleteRetained(t); named || !warned(s, ReasonRetainedCRDNotDeleted, "it holds 2 VirtualMachineTemplates") || len(s.retained.crds) != 1 {
				t.Fatalf("annotation %q, events %+v, retained %+v: want the name removed, a Warning, the CRD still retained", v, s.Events, s.retained)
			}
			// Named again, for the count recorded now.
			metav1.SetMetaDataAnnotation(&e.kv.ObjectMeta, metadata.DeleteRetainedAnnotation, templatesCRD)
			if err := e.c.Update(ctx, e.kv); err != nil {
				t.Fatal(err)
			}
			if err := e.r.observeRetained(ctx, &scope{kv: e.kv, cfg: s.cfg}); err != nil {
				t.Fatal(err)
			}
			if _, ok := e.crd(t, templatesCRD); ok {
				t.Fatal("named again, it is still there")
			}
		})
	}
}

// A retained CRD whose objects cannot be counted is not deleted, whatever the
// annotation says; the name stays until they can be.
func TestADeleteAnnotationDeletesNoCRDThatCannotBeCounted(t *testing.T) {
	forbidden := interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*metav1.PartialObjectMetadataList); ok && list.GetObjectKind().GroupVersionKind().Group == templateGVK.Group {
			return apierrors.NewForbidden(schema.GroupResource{Group: templateGVK.Group, Resource: "virtualmachinetemplates"}, "", errors.New("no list"))
		}
		return c.List(ctx, list, opts...)
	}}
	e := newRetainEnv(t, templatesCRD, forbidden, retainedTemplatesCRD("1"), userObject(templateGVK, "team-a", "fedora"))
	s := &scope{kv: e.kv, cfg: &deployid.Config{ID: "new"}}
	if err := e.r.observeRetained(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.crd(t, templatesCRD); !ok {
		t.Fatal("deleted a CRD whose objects cannot be counted")
	}
	if v, _ := e.deleteRetained(t); v != templatesCRD || !warned(s, ReasonRetainedCRDNotDeleted, "cannot be counted (forbidden") {
		t.Fatalf("annotation %q, events %+v", v, s.Events)
	}
}

// The name is removed from the CR before the CRD is deleted, by a patch that
// fails on a CR changed since it was read: a stale read of a name the admin
// has removed deletes nothing.
func TestAStaleDeleteAnnotationDeletesNothing(t *testing.T) {
	e := newRetainEnv(t, templatesCRD, interceptor.Funcs{}, retainedTemplatesCRD("1"), userObject(templateGVK, "team-a", "fedora"))
	stale := e.kv.DeepCopy()
	delete(e.kv.Annotations, metadata.DeleteRetainedAnnotation) // the admin changed their mind
	if err := e.c.Update(context.Background(), e.kv); err != nil {
		t.Fatal(err)
	}
	err := e.r.observeRetained(context.Background(), &scope{kv: stale, cfg: &deployid.Config{ID: "new"}})
	if !apierrors.IsConflict(errors.Unwrap(err)) {
		t.Fatalf("%v: want a conflict", err)
	}
	if _, ok := e.crd(t, templatesCRD); !ok {
		t.Fatal("deleted on a stale read of the CR")
	}
}

// A CRD the target drops whose objects cannot be counted is retained, saying
// so, with no count recorded.
func TestAnOrphanedCRDThatCannotBeCountedIsKept(t *testing.T) {
	notServed := interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if list.GetObjectKind().GroupVersionKind().Group == templateGVK.Group {
			return apierrors.NewNotFound(schema.GroupResource{Group: templateGVK.Group, Resource: "virtualmachinetemplates"}, "")
		}
		return c.List(ctx, list, opts...)
	}}
	e := newRetainEnv(t, "", notServed, templatesCRDWith(nil))
	s := e.orphanScope(t)
	if err := e.r.deleteOrphans(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	got, ok := e.crd(t, templatesCRD)
	if !ok {
		t.Fatal("deleted a CRD whose objects cannot be counted (a 404 for a version it serves)")
	}
	if _, counted := got.Annotations[metadata.RetainedCountAnnotation]; counted || !strings.HasPrefix(got.Annotations[metadata.RetainedAnnotation], "objects not counted: the API server answers 404") ||
		!warned(s, ReasonCRDsRetained, "which cannot be counted") {
		t.Fatalf("annotations %v, events %+v", got.Annotations, s.Events)
	}
}

// An upgrade's preflight says what becomes of the CRDs the target drops, the
// CR's delete-retained annotation read; for a release delegated to its own
// operator image it also names the target's CRDs the operator may not list.
func TestPreflightSaysWhatBecomesOfTheUserData(t *testing.T) {
	schedules := userCRD(schema.GroupVersionKind{Group: "schedule.kubevirt.io", Version: "v1alpha1", Kind: "VirtualMachineSnapshotSchedule"},
		"virtualmachinesnapshotschedules", apiextensionsv1.NamespaceScoped, nil)
	e := newRetainEnv(t, templatesCRD, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if review, ok := obj.(*authorizationv1.SelfSubjectAccessReview); ok {
				review.Status.Allowed = review.Spec.ResourceAttributes.Group != "schedule.kubevirt.io"
				return nil
			}
			return c.Create(ctx, obj, opts...)
		},
	}, retainedTemplatesCRD("1"), userObject(templateGVK, "team-a", "fedora"), userObject(templateGVK, "team-a", "centos"))
	e.r.Clock = clocktesting.NewFakePassiveClock(time.Now())
	target := &strategy.Strategy{}
	if err := target.Add(schedules); err != nil {
		t.Fatal(err)
	}
	cfg := &deployid.Config{KubeVirtVersion: "v1.10.0", Registry: "quay.io/kubevirt"}
	checks, err := e.r.preflightChecks(context.Background(), e.kv, cfg, target)
	if err != nil {
		t.Fatal(err)
	}
	says := map[string]string{}
	for _, c := range checks {
		says[c.Name] = c.Message
	}
	if m := says[preflight.CheckRemovedCRDs]; !strings.Contains(m, templatesCRD+" kept for its data (2 VirtualMachineTemplates): it held 1 when it was kept") {
		t.Errorf("RemovedCRDs: %q", m)
	}
	if m := says[preflight.CheckCountable]; !strings.Contains(m, "virtualmachinesnapshotschedules.schedule.kubevirt.io (list on resource virtualmachinesnapshotschedules in API group schedule.kubevirt.io)") {
		t.Errorf("CountableCRDs: %q", m)
	}
}
