package transient

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestIsTransient(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"conflict", apierrors.NewConflict(gr, "virt-api", errors.New("changed")), true},
		{"a webhook that cannot connect (500)", apierrors.NewInternalError(errors.New(`failed calling webhook "x": connection refused`)), true},
		{"throttled", apierrors.NewTooManyRequests("slow down", 1), true},
		{"unavailable", apierrors.NewServiceUnavailable("restarting"), true},
		{"connection refused, wrapped", fmt.Errorf("applying virt-api: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), true},
		{"forbidden", apierrors.NewForbidden(gr, "virt-api", errors.New("no RBAC")), false},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "virt-api", nil), false},
		{"a webhook's refusal", apierrors.NewBadRequest("admission webhook denied the request"), false},
		{"anything else", errors.New("boom"), false},
	} {
		if got := Is(tc.err); got != tc.want {
			t.Errorf("%s: transient %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Transient errors stay quiet for Grace, then degrade; a clean pass
// or a real error starts the count again.
func TestTransientErrorsDegradeOnlyWhenTheyLast(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	blip := apierrors.NewServiceUnavailable("restarting")
	var tr Errors
	for _, step := range []struct {
		name string
		err  error
		at   time.Duration
		want bool
	}{
		{"first blip", blip, 0, false},
		{"still within the grace", blip, Grace - time.Second, false},
		{"lasting", blip, Grace, true},
		{"a real error at once", errors.New("boom"), Grace + time.Second, true},
		{"a blip after a real error starts anew", blip, Grace + 2*time.Second, false},
	} {
		if got := tr.Degrade(step.err, t0.Add(step.at)); got != step.want {
			t.Fatalf("%s: degrade %v, want %v", step.name, got, step.want)
		}
	}
	tr.Clear()
	if tr.Degrade(blip, t0.Add(10*Grace)) {
		t.Fatal("after a clean pass a blip degrades at once")
	}
}
