// Package coalesce gathers watch events into fewer reconciles: an event
// enqueues its requests a window later, and events arriving meanwhile join
// that reconcile (the work queue keeps the earliest time an item is due).
package coalesce

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Requests maps an event's object to the requests to enqueue.
type Requests func(ctx context.Context, o client.Object) []reconcile.Request

// Handler enqueues requests(obj) window after each event.
func Handler(window time.Duration, requests Requests) handler.EventHandler {
	return HandlerBy(func(_, _ client.Object) time.Duration { return window }, requests)
}

// Window is how long an event waits to join a reconcile: old is nil for a
// create, new for a delete; both are the object for a generic event.
type Window func(old, new client.Object) time.Duration

// HandlerBy enqueues requests(obj) window(old, new) after each event, so that
// events that matter now join a reconcile sooner than those that can wait.
func HandlerBy(window Window, requests Requests) handler.EventHandler {
	add := func(ctx context.Context, old, new client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		o := new
		if o == nil {
			o = old
		}
		after := window(old, new)
		for _, req := range requests(ctx, o) {
			q.AddAfter(req, after)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, nil, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.ObjectOld, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, nil, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, e.Object, q)
		},
	}
}
