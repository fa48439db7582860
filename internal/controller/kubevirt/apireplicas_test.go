package kubevirt

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

// virt-api is sized by the nodes virt-handler marks schedulable, as upstream
// sizes it, and resized when they change, with no new pod template.
func TestVirtAPIReplicasFollowTheSchedulableNodes(t *testing.T) {
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt", Generation: 1,
		Finalizers: []string{metadata.KubeVirtFinalizer}}, Spec: v1.KubeVirtSpec{ImageTag: "v1.8.4"}}
	installed := strategyFor(t, kv)
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(kv, installed.cm).WithStatusSubresource(&v1.KubeVirt{}).
		WithIndex(&corev1.Event{}, "involvedObject.uid", func(o client.Object) []string {
			return []string{string(o.(*corev1.Event).InvolvedObject.UID)}
		}).Build()
	r := &Reconciler{Client: c, APIReader: c, Namespace: "kubevirt", Env: operatorEnv, ServiceAccount: "virt-operator",
		Clock: clocktesting.NewFakeClock(heldT0), Recorder: events.NewFakeRecorder(10000)}
	virtAPI := func() *appsv1.Deployment {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "kubevirt", Name: "kubevirt"}}); err != nil {
			t.Fatal(err)
		}
		d := &appsv1.Deployment{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "kubevirt", Name: apply.VirtAPI}, d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	before := virtAPI()
	if *before.Spec.Replicas != 2 {
		t.Fatalf("no schedulable node: %d replicas, want 2", *before.Spec.Replicas)
	}
	for i := range 35 {
		mark := "true"
		if i >= 30 {
			mark = "false"
		}
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%02d", i), Labels: map[string]string{metadata.SchedulableLabel: mark}}}
		if err := c.Create(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	after := virtAPI()
	if *after.Spec.Replicas != 3 {
		t.Fatalf("30 schedulable nodes (5 marked false): %d replicas, want 3", *after.Spec.Replicas)
	}
	if h := before.Annotations[apply.TemplateHashAnnotation]; h == "" || after.Annotations[apply.TemplateHashAnnotation] != h {
		t.Error("resizing virt-api changed its pod template")
	}
}
