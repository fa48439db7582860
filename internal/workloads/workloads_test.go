package workloads

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func TestCount(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	vmi := func(name string) client.Object {
		return &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	}
	vm := &v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "stopped", Namespace: "team-a"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(vmi("a"), vmi("b"), vm).Build()
	counts, err := Count(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	// The replica set and pool kinds are not served here: they count 0.
	if counts.Total() != 3 || counts.String() != "2 VirtualMachineInstances, 1 VirtualMachines" {
		t.Errorf("counts %v %q", counts, counts)
	}

	failing := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("boom")
		},
	}).Build()
	if _, err := Count(context.Background(), failing); err == nil || err.Error() != "counting VirtualMachineInstances: boom" {
		t.Errorf("a failing list: %v", err)
	}
	// Deleted CRDs the client still maps: the API server answers 404.
	gone := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		List: func(_ context.Context, _ client.WithWatch, _ client.ObjectList, _ ...client.ListOption) error {
			return apierrors.NewNotFound(schema.GroupResource{Group: "kubevirt.io", Resource: "virtualmachineinstances"}, "")
		},
	}).Build()
	if counts, err := Count(context.Background(), gone); err != nil || counts.Total() != 0 {
		t.Errorf("CRDs gone: %v, %v", counts, err)
	}
	if (Counts{0, 0, 0, 0}).String() != "" {
		t.Error("no workloads render as text")
	}
}
