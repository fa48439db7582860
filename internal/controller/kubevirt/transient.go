package kubevirt

import (
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// transientGrace is how long apply errors that clear up by themselves may
// last before they show as Degraded: an API server restart, or a webhook whose
// Service is being recreated, is a retry, not something an admin must act on.
const transientGrace = time.Minute

// isTransient reports whether err is one a retry is expected to get past: a
// conflict, a timeout, throttling, an unavailable or failing server (a webhook
// call that cannot connect is a 500), or a broken connection.
func isTransient(err error) bool {
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

// transientErrors remembers since when apply errors have been transient only.
type transientErrors struct {
	since time.Time
}

// degrade says whether err, seen at now, should set Degraded: any error that
// is not transient at once, a transient one only once such errors have lasted
// transientGrace without a clean pass in between.
func (t *transientErrors) degrade(err error, now time.Time) bool {
	if !isTransient(err) {
		t.since = time.Time{}
		return true
	}
	if t.since.IsZero() {
		t.since = now
	}
	return now.Sub(t.since) >= transientGrace
}

// clear records a pass without an apply error.
func (t *transientErrors) clear() { t.since = time.Time{} }
