package coalesce

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// A burst of events within the window is one queued request, due after it.
func TestHandlerGathersABurst(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	one := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "kubevirt", Name: "kubevirt"}}
	h := Handler(50*time.Millisecond, func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{one} })
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	ctx := context.Background()
	for range 20 {
		h.Create(ctx, event.CreateEvent{Object: pod}, q)
		h.Update(ctx, event.UpdateEvent{ObjectOld: pod, ObjectNew: pod}, q)
		h.Delete(ctx, event.DeleteEvent{Object: pod}, q)
	}
	if q.Len() != 0 {
		t.Fatalf("%d requests queued at once, want them after the window", q.Len())
	}
	time.Sleep(200 * time.Millisecond)
	if q.Len() != 1 {
		t.Fatalf("%d requests after the window, want the burst as one", q.Len())
	}
}
