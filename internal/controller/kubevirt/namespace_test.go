package kubevirt

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

// An install labels the namespace for OpenShift's platform monitoring, as
// upstream's operator does, keeping its other labels; a refused patch is a
// Warning Event and the install goes on.
func TestInstallLabelsTheNamespace(t *testing.T) {
	for _, refuse := range []bool{false, true} {
		kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt", Generation: 1,
			Finalizers: []string{metadata.KubeVirtFinalizer}}, Spec: v1.KubeVirtSpec{ImageTag: "v1.8.4"}}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}}
		funcs := interceptor.Funcs{}
		if refuse {
			funcs.Patch = func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if _, isNamespace := obj.(*corev1.Namespace); isNamespace {
					return apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "kubevirt", errors.New("no rule"))
				}
				return c.Patch(ctx, obj, patch, opts...)
			}
		}
		c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(kv, ns, strategyFor(t, kv).cm).WithStatusSubresource(&v1.KubeVirt{}).
			WithIndex(&corev1.Event{}, "involvedObject.uid", func(o client.Object) []string {
				return []string{string(o.(*corev1.Event).InvolvedObject.UID)}
			}).WithInterceptorFuncs(funcs).Build()
		recorder := events.NewFakeRecorder(10000)
		r := &Reconciler{Client: c, APIReader: c, Namespace: "kubevirt", Env: operatorEnv, ServiceAccount: "virt-operator",
			Clock: clocktesting.NewFakeClock(heldT0), Recorder: recorder}
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "kubevirt", Name: "kubevirt"}}); err != nil {
			t.Fatalf("refused %v: %v", refuse, err)
		}
		got := &corev1.Namespace{}
		if err := c.Get(context.Background(), client.ObjectKey{Name: "kubevirt"}, got); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{false: "true", true: ""}[refuse]; got.Labels[metadata.ClusterMonitoringLabel] != want || got.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
			t.Errorf("refused %v: namespace labels %v, want %s=%q and the others kept", refuse, got.Labels, metadata.ClusterMonitoringLabel, want)
		}
		warned := false
		for len(recorder.Events) > 0 {
			warned = warned || strings.Contains(<-recorder.Events, "NamespaceNotLabelled")
		}
		if warned != refuse {
			t.Errorf("refused %v: NamespaceNotLabelled Event %v", refuse, warned)
		}
	}
}
