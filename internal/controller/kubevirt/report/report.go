// Package report holds what the KubeVirt controller's phases report besides
// their results: the problem that stops a phase, as the Degraded condition
// says it; the Events of what a phase did; and when to look again. A phase of
// its own package (the strategy source, the canary, the uninstall) returns a
// Report, and the controller's pass merges it into its scope.
package report

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Event types.
const (
	Normal  = corev1.EventTypeNormal
	Warning = corev1.EventTypeWarning
)

// Problem is a Degraded condition's reason and message.
type Problem struct {
	Reason, Message string
	// Detail is what the message leaves out (an API server's raw text), for
	// the Warning Event and the log only: a condition's message stays
	// readable and stable.
	Detail string
	// Warning is the reason of the Warning Event a new problem sends; "" sends
	// none (the virt-handler rollout sends its own, naming the crashed pod).
	Warning string
}

// Event is an Event to emit on the KubeVirt CR.
type Event struct {
	Type, Reason, Action, Message string
	// Transition: the Event tells of a change the status records, and is sent
	// only once that status is written.
	Transition bool
}

// Report is what a phase reports besides its result.
type Report struct {
	// Problem is what stops the phase; the first one recorded wins, so a later
	// step never hides an earlier failure.
	Problem *Problem
	// Events are what the phase did, in order.
	Events []Event
	// Requeue is when to look again without an event (0: on events only).
	Requeue time.Duration
}

// Fail records p unless a problem is recorded already.
func (r *Report) Fail(p Problem) {
	if r.Problem == nil {
		r.Problem = &p
	}
}

// Emit records an Event of something the phase did.
func (r *Report) Emit(typ, reason, action, message string) {
	r.Events = append(r.Events, Event{Type: typ, Reason: reason, Action: action, Message: message})
}

// RequeueAfter asks to look again within d (d ≤ 0 asks nothing).
func (r *Report) RequeueAfter(d time.Duration) {
	r.Requeue = MinPositive(r.Requeue, d)
}

// Merge adds other's problem (unless one is recorded), Events and requeue.
func (r *Report) Merge(other Report) {
	if other.Problem != nil {
		r.Fail(*other.Problem)
	}
	r.Events = append(r.Events, other.Events...)
	r.RequeueAfter(other.Requeue)
}

// MinPositive is the smaller of a and b, ignoring one that is not positive.
func MinPositive(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	default:
		return min(a, b)
	}
}
