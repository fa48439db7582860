package workloads

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

var (
	vmiGVK       = schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstance"}
	vmGVK        = schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachine"}
	migGVK       = schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstanceMigration"}
	snapshotGVK  = schema.GroupVersionKind{Group: "snapshot.kubevirt.io", Version: "v1beta1", Kind: "VirtualMachineSnapshot"}
	policyGVK    = schema.GroupVersionKind{Group: "migrations.kubevirt.io", Version: "v1alpha1", Kind: "MigrationPolicy"}
	clusterITGVK = schema.GroupVersionKind{Group: "instancetype.kubevirt.io", Version: "v1beta1", Kind: "VirtualMachineClusterInstancetype"}
	itGVK        = schema.GroupVersionKind{Group: "instancetype.kubevirt.io", Version: "v1beta1", Kind: "VirtualMachineInstancetype"}
)

func object(gvk schema.GroupVersionKind, namespace, name string, labels, annotations map[string]string) client.Object {
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels, Annotations: annotations}}
	o.SetGroupVersionKind(gvk)
	return o
}

// crdOf is the CRD of gvk, serving versions (gvk's version when none is
// given), managed by the operator or not.
func crdOf(gvk schema.GroupVersionKind, scope apiextensionsv1.ResourceScope, managed bool, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	plural := strings.ToLower(plural(gvk.Kind))
	c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: plural + "." + gvk.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: gvk.Group, Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: gvk.Kind, ListKind: gvk.Kind + "List", Plural: plural}}}
	if len(versions) == 0 {
		versions = []string{gvk.Version}
	}
	for i, v := range versions {
		c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: i == 0})
	}
	if managed {
		c.Labels = map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}
	}
	return c
}

func newClient(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) client.WithWatch {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), funcs)
}

// Every kind of a managed CRD is counted, upstream's workload kinds first,
// but not what the operator installs itself (cluster instancetypes, labelled
// and stamped) nor a workload's own bookkeeping (migrations). A namespaced
// copy of an installed instancetype keeps its label and annotations, and is
// user data all the same.
func TestCountManaged(t *testing.T) {
	ours := map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}
	stamped := map[string]string{metadata.InstallStrategyIdentifierAnnotation: "5c1e"}
	c := newClient(t, interceptor.Funcs{},
		crdOf(snapshotGVK, apiextensionsv1.NamespaceScoped, true), crdOf(vmiGVK, apiextensionsv1.NamespaceScoped, true),
		crdOf(vmGVK, apiextensionsv1.NamespaceScoped, true), crdOf(migGVK, apiextensionsv1.NamespaceScoped, true),
		crdOf(policyGVK, apiextensionsv1.ClusterScoped, true), crdOf(clusterITGVK, apiextensionsv1.ClusterScoped, true),
		crdOf(itGVK, apiextensionsv1.NamespaceScoped, true), crdOf(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Else"}, apiextensionsv1.NamespaceScoped, false),
		object(vmiGVK, "default", "a", nil, nil), object(vmiGVK, "default", "b", nil, nil), object(vmGVK, "team-a", "stopped", nil, nil),
		object(migGVK, "default", "m", nil, nil), object(snapshotGVK, "team-a", "s", nil, nil), object(policyGVK, "", "p", nil, nil),
		object(clusterITGVK, "", "u1.medium", ours, stamped), object(clusterITGVK, "", "mine", nil, nil),
		object(itGVK, "team-a", "u1.medium", ours, stamped), // kubectl get -o yaml of the installed one, in a namespace
	)
	counts, err := CountManaged(context.Background(), c, c)
	if err != nil {
		t.Fatal(err)
	}
	want := "2 VirtualMachineInstances, 1 VirtualMachines, 1 MigrationPolicies, 1 VirtualMachineClusterInstancetypes, 1 VirtualMachineInstancetypes, 1 VirtualMachineSnapshots"
	if got := counts.String(); got != want || counts.Total() != 7 || counts.None() {
		t.Fatalf("counts %q (total %d), want %q", got, counts.Total(), want)
	}
	if k, ok := counts.Of("virtualmachinesnapshots.snapshot.kubevirt.io"); !ok || k.N != 1 {
		t.Fatalf("snapshots %+v", k)
	}
	if k, ok := counts.Of("virtualmachineinstancemigrations.kubevirt.io"); !ok || k.N != 0 || !k.Known() {
		t.Fatalf("migrations %+v: want 0, unread", k)
	}
	if _, ok := counts.Of("elses.example.com"); ok {
		t.Fatal("counted a CRD the operator does not manage")
	}
}

// A cluster-scoped object labelled as the operator's but not stamped with the
// deployment it was rendered for was not installed by the operator: user data.
func TestInstalledByOperator(t *testing.T) {
	ours := map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}
	legacy := map[string]string{metadata.ManagedByLabel: metadata.LegacyManagedByValue}
	stamped := map[string]string{metadata.InstallStrategyIdentifierAnnotation: "5c1e"}
	for _, tc := range []struct {
		name       string
		obj        client.Object
		namespaced bool
		want       bool
	}{
		{"cluster-scoped, labelled, stamped", object(clusterITGVK, "", "u1.medium", ours, stamped), false, true},
		{"an older operator's label", object(clusterITGVK, "", "u1.medium", legacy, stamped), false, true},
		{"labelled, not stamped", object(clusterITGVK, "", "mine", ours, nil), false, false},
		{"stamped, not labelled", object(clusterITGVK, "", "mine", nil, stamped), false, false},
		{"a namespaced copy", object(itGVK, "team-a", "u1.medium", ours, stamped), true, false},
	} {
		if got := installedByOperator(tc.obj, tc.namespaced); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A count fails closed: a kind whose objects cannot be listed is unknown,
// never 0, and says why; only a CRD that is gone or being deleted counts 0.
func TestCountFailsClosed(t *testing.T) {
	snapshots := crdOf(snapshotGVK, apiextensionsv1.NamespaceScoped, true)
	gr := schema.GroupResource{Group: snapshotGVK.Group, Resource: "virtualmachinesnapshots"}
	failing := func(err error) interceptor.Funcs {
		return interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error { return err }}
	}
	deleting := snapshots.DeepCopy()
	deleting.DeletionTimestamp, deleting.Finalizers = &metav1.Time{Time: time.Now()}, []string{"customresourcecleanup.apiextensions.k8s.io"}
	servesNothing := snapshots.DeepCopy()
	servesNothing.Spec.Versions[0].Served = false
	for _, tc := range []struct {
		name  string
		funcs interceptor.Funcs
		crd   *apiextensionsv1.CustomResourceDefinition
		// want is the count's String: "" for 0 known.
		want string
	}{
		{"a forbidden list", failing(apierrors.NewForbidden(gr, "", errors.New(`User "system:serviceaccount:kubevirt:kubevirt-operator" cannot list`))), snapshots,
			"VirtualMachineSnapshots: cannot be counted: forbidden: virtualmachinesnapshots.snapshot.kubevirt.io is forbidden: User"},
		{"a 404 for a CRD that exists", failing(apierrors.NewNotFound(gr, "")), snapshots,
			"VirtualMachineSnapshots: cannot be counted: the API server answers 404 for snapshot.kubevirt.io/v1beta1, which CRD virtualmachinesnapshots.snapshot.kubevirt.io serves"},
		{"a failing list", failing(errors.New("boom")), snapshots, "VirtualMachineSnapshots: cannot be counted: boom"},
		{"a CRD that cannot be read", interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("timeout")
		}}, snapshots, "the objects of CRD virtualmachinesnapshots.snapshot.kubevirt.io: cannot be counted: reading the CRD: timeout"},
		{"a CRD that serves nothing", interceptor.Funcs{}, servesNothing, "VirtualMachineSnapshots: cannot be counted: CRD virtualmachinesnapshots.snapshot.kubevirt.io serves no version"},
		{"a CRD being deleted", failing(errors.New("not listed")), deleting, ""},
		{"a CRD that is gone", failing(errors.New("not listed")), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []client.Object{object(snapshotGVK, "default", "s", nil, nil)}
			if tc.crd != nil {
				objs = append(objs, tc.crd)
			}
			counts := CountCRDs(context.Background(), newClient(t, tc.funcs, objs...), []string{snapshots.Name})
			if got := counts.String(); !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
				t.Fatalf("%q, want %q", got, tc.want)
			}
			if counts.None() != (tc.want == "") || counts.Total() != 0 {
				t.Fatalf("None %v, Total %d: an unknown count is not none, and never adds to the total", counts.None(), counts.Total())
			}
		})
	}
}

// An API server that leaves out how many more objects there are is answered
// by counting them page by page: a count is exact.
func TestCountWithoutRemainingItemCount(t *testing.T) {
	policies := crdOf(policyGVK, apiextensionsv1.ClusterScoped, true)
	objs := []client.Object{policies}
	for _, name := range []string{"a", "b", "c", "d"} {
		objs = append(objs, object(policyGVK, "", name, nil, nil))
	}
	// The fake ignores limits: this one pages by the limit, one object at a
	// time at most, and never says how many remain.
	c := newClient(t, interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if err := c.List(ctx, list, opts...); err != nil {
			return err
		}
		l, ok := list.(*metav1.PartialObjectMetadataList)
		if !ok {
			return nil
		}
		lo := (&client.ListOptions{}).ApplyOptions(opts)
		start := 0
		if lo.Continue != "" {
			start = int(lo.Continue[0] - '0')
		}
		end := min(start+1, len(l.Items))
		if end < len(l.Items) {
			l.Continue = string(rune('0' + end))
		}
		l.Items = l.Items[start:end]
		return nil
	}}, objs...)
	if counts := CountCRDs(context.Background(), c, []string{policies.Name}); counts.String() != "4 MigrationPolicies" {
		t.Fatalf("%q, want 4 MigrationPolicies", counts.String())
	}
}

// InRemovedCRDs names the managed CRDs a target does not keep, with their
// counts.
func TestInRemovedCRDs(t *testing.T) {
	templateGVK := schema.GroupVersionKind{Group: "template.kubevirt.io", Version: "v1alpha1", Kind: "VirtualMachineTemplate"}
	templates, vms := crdOf(templateGVK, apiextensionsv1.NamespaceScoped, true), crdOf(vmGVK, apiextensionsv1.NamespaceScoped, true)
	c := newClient(t, interceptor.Funcs{}, templates, vms, object(templateGVK, "team-a", "fedora", nil, nil), object(vmGVK, "team-a", "vm", nil, nil))
	removed, counts, err := InRemovedCRDs(context.Background(), c, c, []*apiextensionsv1.CustomResourceDefinition{vms})
	if err != nil || len(removed) != 1 || removed[0].Name != templates.Name || counts.String() != "1 VirtualMachineTemplates" {
		t.Fatalf("%v, %v, %q: want the templates' CRD, holding 1", err, removed, counts)
	}
	if n, held, unknown := counts.For(vms.Name); unknown != "not counted" || n != 0 || held != "" {
		t.Fatalf("a CRD not counted: %d, %q, %q", n, held, unknown)
	}
}

// Unlistable asks the API server, per CRD, whether the operator may list its
// objects, and names those it may not.
func TestUnlistable(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := authorizationv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var asked []string
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).Build(), interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			review := obj.(*authorizationv1.SelfSubjectAccessReview)
			a := review.Spec.ResourceAttributes
			asked = append(asked, a.Verb+" "+a.Resource+"."+a.Group)
			review.Status.Allowed = a.Group != "schedule.kubevirt.io"
			return nil
		},
	})
	schedules := crdOf(schema.GroupVersionKind{Group: "schedule.kubevirt.io", Version: "v1alpha1", Kind: "VirtualMachineSnapshotSchedule"}, apiextensionsv1.NamespaceScoped, true)
	crds := []*apiextensionsv1.CustomResourceDefinition{crdOf(vmGVK, apiextensionsv1.NamespaceScoped, true), schedules, crdOf(migGVK, apiextensionsv1.NamespaceScoped, true)}
	got, err := Unlistable(context.Background(), c, crds)
	if err != nil || len(got) != 1 || got[0] != schedules.Name {
		t.Fatalf("%v, %v: want the schedules' CRD", got, err)
	}
	if want := []string{"list virtualmachines.kubevirt.io", "list virtualmachinesnapshotschedules.schedule.kubevirt.io"}; !slices.Equal(asked, want) {
		t.Errorf("asked %v, want %v (migrations are no user data)", asked, want)
	}
	failing := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).Build(), interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			return errors.New("forbidden")
		},
	})
	if _, err := Unlistable(context.Background(), failing, crds); err == nil || !strings.Contains(err.Error(), "virtualmachines.kubevirt.io: forbidden") {
		t.Errorf("a review that fails: %v", err)
	}
}
