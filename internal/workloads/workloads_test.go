package workloads

import (
	"context"
	"errors"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
)

func object(gvk schema.GroupVersionKind, namespace, name string, labels map[string]string) client.Object {
	o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels}}
	o.SetGroupVersionKind(gvk)
	return o
}

func crd(name string, managed bool) client.Object {
	c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if managed {
		c.Labels = map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}
	}
	return c
}

func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{vmiGVK, vmGVK, migGVK, snapshotGVK, policyGVK} {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	m.Add(clusterITGVK, meta.RESTScopeRoot)
	return m
}

// Every kind of a managed CRD is counted, upstream's workload kinds first,
// but not what the operator installs itself (cluster instancetypes) nor a
// workload's own bookkeeping (migrations); a CRD the mapper does not serve is
// left out.
func TestCountManaged(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ours := map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}
	c := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(testMapper()).WithObjects(
		crd("virtualmachinesnapshots.snapshot.kubevirt.io", true), crd("virtualmachineinstances.kubevirt.io", true),
		crd("virtualmachines.kubevirt.io", true), crd("virtualmachineinstancemigrations.kubevirt.io", true),
		crd("migrationpolicies.migrations.kubevirt.io", true), crd("virtualmachineclusterinstancetypes.instancetype.kubevirt.io", true),
		crd("virtualmachinepools.pool.kubevirt.io", true), crd("someone-elses.example.com", false),
		object(vmiGVK, "default", "a", nil), object(vmiGVK, "default", "b", nil), object(vmGVK, "team-a", "stopped", nil),
		object(migGVK, "default", "m", nil), object(snapshotGVK, "team-a", "s", nil), object(policyGVK, "", "p", nil),
		object(clusterITGVK, "", "u1.medium", ours), object(clusterITGVK, "", "mine", nil),
	).Build()
	counts, err := CountManaged(context.Background(), c, c, c.RESTMapper())
	if err != nil {
		t.Fatal(err)
	}
	want := "2 VirtualMachineInstances, 1 VirtualMachines, 1 MigrationPolicies, 1 VirtualMachineClusterInstancetypes, 1 VirtualMachineSnapshots"
	if got := counts.String(); got != want || counts.Total() != 6 || counts.Workloads() != 3 {
		t.Fatalf("counts %q (total %d, workloads %d), want %q", got, counts.Total(), counts.Workloads(), want)
	}
	if n := counts.Of("virtualmachinesnapshots.snapshot.kubevirt.io"); n != 1 {
		t.Fatalf("snapshots %d", n)
	}
	for _, k := range counts {
		if strings.Contains(k.CRD, "migrations.kubevirt.io") && k.CRD != "migrationpolicies.migrations.kubevirt.io" || k.CRD == "someone-elses.example.com" {
			t.Fatalf("counted %s", k.CRD)
		}
	}
}

func TestCountErrors(t *testing.T) {
	kinds := []Kind{{CRD: "virtualmachineinstances.kubevirt.io", GVK: vmiGVK}}
	failing := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("boom")
		},
	}).Build()
	if _, err := Count(context.Background(), failing, kinds); err == nil || err.Error() != "counting VirtualMachineInstances: boom" {
		t.Errorf("a failing list: %v", err)
	}
	// Deleted CRDs the client still maps: the API server answers 404.
	gone := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		List: func(_ context.Context, _ client.WithWatch, _ client.ObjectList, _ ...client.ListOption) error {
			return apierrors.NewNotFound(schema.GroupResource{Group: "kubevirt.io", Resource: "virtualmachineinstances"}, "")
		},
	}).Build()
	if counts, err := Count(context.Background(), gone, kinds); err != nil || counts.Total() != 0 || counts.String() != "" {
		t.Errorf("CRDs gone: %v, %v", counts, err)
	}
}
