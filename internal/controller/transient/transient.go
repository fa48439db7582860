// Package transient tells the errors a retry is expected to get past (an API
// server restarting, a conflict, a timeout) from those an admin must act on,
// and keeps the grace a controller gives the former before it reports them:
// an API server restart is a retry, not a Degraded condition.
package transient

import (
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Grace is how long apply errors that clear up by themselves may
// last before they show as Degraded: an API server restart, or a webhook whose
// Service is being recreated, is a retry, not something an admin must act on.
const Grace = time.Minute

// Is reports whether err is one a retry is expected to get past: a
// conflict, a timeout, throttling, an unavailable or failing server (a webhook
// call that cannot connect is a 500), or a broken connection.
func Is(err error) bool {
	switch {
	case apierrors.IsConflict(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsTooManyRequests(err), apierrors.IsServiceUnavailable(err), apierrors.IsInternalError(err),
		apierrors.IsAlreadyExists(err):
		return true
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// Errors remembers since when apply errors have been transient only.
type Errors struct {
	since time.Time
}

// Degrade says whether err, seen at now, should set Degraded: any error that
// is not transient at once, a transient one only once such errors have lasted
// Grace without a clean pass in between.
func (t *Errors) Degrade(err error, now time.Time) bool {
	if !Is(err) {
		t.since = time.Time{}
		return true
	}
	if t.since.IsZero() {
		t.since = now
	}
	return now.Sub(t.since) >= Grace
}

// Clear records a pass without an apply error.
func (t *Errors) Clear() { t.since = time.Time{} }
