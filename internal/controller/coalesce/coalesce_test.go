package coalesce

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func request(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "kubevirt", Name: name}}
}

// fakeQueue is the controller's work queue on a fake clock: time moves only
// when the test steps it, so how long the test itself takes does not matter.
type fakeQueue struct {
	t     *testing.T
	clock *clocktesting.FakeClock
	q     workqueue.TypedRateLimitingInterface[reconcile.Request]
}

func newFakeQueue(t *testing.T) *fakeQueue {
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](),
		workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Clock: clock})
	t.Cleanup(q.ShutDown)
	return &fakeQueue{t: t, clock: clock, q: q}
}

// next waits for the queue to hand out an item, hands it back as done and
// returns it. The delaying queue moves due items on a goroutine of its own,
// hence the wait; its timeout is only for a queue that never delivers.
func (f *fakeQueue) next() reconcile.Request {
	f.t.Helper()
	got := make(chan reconcile.Request, 1)
	go func() {
		item, shutdown := f.q.Get()
		if !shutdown {
			f.q.Done(item)
			got <- item
		}
	}()
	select {
	case item := <-got:
		return item
	case <-time.After(30 * time.Second):
		f.t.Fatal("nothing was handed out")
		return reconcile.Request{}
	}
}

// barrier returns the next item handed out once the clock reaches now+after,
// which must be a marker request enqueued here with that delay: the delaying
// queue takes additions in order and hands due items out by due time, so by
// then every earlier addition has been taken in, and an item due no later than
// the marker is already queued.
func (f *fakeQueue) barrier(name string, after time.Duration) reconcile.Request {
	f.t.Helper()
	f.q.AddAfter(request(name), after)
	f.clock.Step(after)
	return f.next()
}

// A burst of events (create, update, delete, generic) is one queued request,
// due a window after the first event: an event inside the window joins it and
// does not push it back. Nothing is handed out earlier, and nothing twice.
func TestHandlerGathersABurst(t *testing.T) {
	const window = 50 * time.Millisecond
	f := newFakeQueue(t)
	one := request("kubevirt")
	h := Handler(window, func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{one} })
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	ctx := context.Background()
	burst := func() {
		for range 20 {
			h.Create(ctx, event.CreateEvent{Object: pod}, f.q)
			h.Update(ctx, event.UpdateEvent{ObjectOld: pod, ObjectNew: pod}, f.q)
			h.Delete(ctx, event.DeleteEvent{Object: pod}, f.q)
			h.Generic(ctx, event.GenericEvent{Object: pod}, f.q)
		}
	}

	burst()
	if n := f.q.Len(); n != 0 {
		t.Fatalf("%d requests queued at once, want them after the window", n)
	}
	f.clock.Step(window / 2)
	burst() // inside the window: joins the pending request
	// Just before the window ends: only the marker is due.
	if got := f.barrier("before", window/2-time.Millisecond); got != request("before") {
		t.Fatalf("%v handed out before the window ended", got)
	}
	if n := f.q.Len(); n != 0 {
		t.Fatalf("%d more requests queued before the window ended", n)
	}

	f.clock.Step(time.Millisecond) // the window since the first event is over
	if got := f.next(); got != one {
		t.Fatalf("handed out %v at the end of the window, want %v", got, one)
	}
	// Past the window of the events inside it: had they been queued on their
	// own, their request would be due before the marker.
	if got := f.barrier("after", 2*window); got != request("after") {
		t.Fatalf("%v handed out again after the window: the burst was not one request", got)
	}
	if n := f.q.Len(); n != 0 {
		t.Fatalf("%d requests queued after the burst's one", n)
	}
}

// Each request of an event is queued: distinct requests are not merged.
func TestHandlerQueuesEveryRequest(t *testing.T) {
	const window = time.Second
	f := newFakeQueue(t)
	a, b := request("a"), request("b")
	h := Handler(window, func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{a, b} })
	h.Create(context.Background(), event.CreateEvent{Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}}, f.q)
	f.clock.Step(window)
	got := map[reconcile.Request]bool{f.next(): true, f.next(): true}
	if !got[a] || !got[b] {
		t.Fatalf("handed out %v, want %v and %v", got, a, b)
	}
}

// HandlerBy gives each event its own window, with what the event carries: a
// create has no old object and a delete no new one. An event that matters now
// is handed out on its short window even after one that can wait: the queue
// keeps the earliest due time.
func TestHandlerByWindowsEachEvent(t *testing.T) {
	const short, long = 10 * time.Millisecond, 5 * time.Second
	f := newFakeQueue(t)
	one := request("kubevirt")
	type seen struct{ old, new string }
	var got []seen
	name := func(o client.Object) string {
		if o == nil {
			return ""
		}
		return o.GetName()
	}
	h := HandlerBy(func(old, new client.Object) time.Duration {
		got = append(got, seen{name(old), name(new)})
		if old != nil && new != nil && old.GetResourceVersion() != new.GetResourceVersion() {
			return short
		}
		return long
	}, func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{one} })
	ctx := context.Background()
	oldPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "1"}}
	newPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "2"}}

	h.Create(ctx, event.CreateEvent{Object: newPod}, f.q)
	h.Delete(ctx, event.DeleteEvent{Object: oldPod}, f.q)
	h.Generic(ctx, event.GenericEvent{Object: newPod}, f.q)
	if got := f.barrier("before", long-time.Millisecond); got != request("before") {
		t.Fatalf("%v handed out before the long window ended", got)
	}
	f.clock.Step(time.Millisecond)
	if got := f.next(); got != one {
		t.Fatalf("handed out %v at the end of the long window, want %v", got, one)
	}

	h.Update(ctx, event.UpdateEvent{ObjectOld: newPod, ObjectNew: newPod}, f.q) // waits long
	h.Update(ctx, event.UpdateEvent{ObjectOld: oldPod, ObjectNew: newPod}, f.q) // matters now
	f.clock.Step(short)
	if got := f.next(); got != one {
		t.Fatalf("handed out %v after the short window, want %v", got, one)
	}
	want := []seen{{"", "p"}, {"p", ""}, {"p", "p"}, {"p", "p"}, {"p", "p"}}
	if len(got) != len(want) {
		t.Fatalf("window asked %d times (%v), want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: window saw old %q new %q, want %q %q", i, got[i].old, got[i].new, want[i].old, want[i].new)
		}
	}
}
