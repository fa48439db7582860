package operator

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func TestCacheTransform(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", ManagedFields: managed},
		Spec:   runtime.RawExtension{Raw: []byte(`{"domain":{"devices":{"disks":[{"name":"root"}]}}}`)},
		Status: v1.VirtualMachineInstanceStatus{Phase: v1.VMIRunning, NodeName: "n1"}}
	out, err := cacheTransform()(vmi)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*v1.VirtualMachineInstance)
	if got.ManagedFields != nil || got.Spec.Raw != nil || got.Status.NodeName != "n1" || got.Name != "vm" {
		t.Fatalf("VMI after the transform: %+v", got)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: managed}, Spec: corev1.PodSpec{NodeName: "n1"}}
	out, err = cacheTransform()(pod)
	if err != nil {
		t.Fatal(err)
	}
	if p := out.(*corev1.Pod); p.ManagedFields != nil || p.Spec.NodeName != "n1" {
		t.Fatalf("pod after the transform: %+v", p)
	}
	// A deletion tombstone passes through.
	if _, err := cacheTransform()("not an object"); err != nil {
		t.Fatal(err)
	}
}
