package workloadupdate

import (
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Backoff decides when a VMI whose workload-update migrations failed is tried
// again: Initial after the first failure, doubling up to Max; after MaxFailures
// (0: never) it needs attention and is not migrated again.
type Backoff struct {
	Initial, Max time.Duration
	MaxFailures  int
	// EvictAfterMaxFailures evicts a VMI that needs attention instead.
	EvictAfterMaxFailures bool
}

// DefaultBackoff is 1m doubling to 30m, attention after 3 failures.
func DefaultBackoff() Backoff {
	return Backoff{Initial: DefaultRetryBackoff, Max: DefaultMaxRetryBackoff, MaxFailures: DefaultMaxFailures}
}

// Failures is a VMI's failed workload-update migrations since its last
// successful migration, read from the migrations list, so a restart keeps it.
type Failures struct {
	Count int
	// Last is when the latest of them failed.
	Last time.Time
}

// Verdict is what the backoff allows for one VMI now.
type Verdict int

const (
	// Retry: no failure in the way; migrate it.
	Retry Verdict = iota
	// Wait: backing off until RetryAt.
	Wait
	// GiveUp: it needs attention.
	GiveUp
)

// Decide is the verdict for f at now and, for Wait, when it ends.
func (b Backoff) Decide(f Failures, now time.Time) (Verdict, time.Time) {
	if f.Count == 0 {
		return Retry, time.Time{}
	}
	if b.MaxFailures > 0 && f.Count >= b.MaxFailures {
		return GiveUp, time.Time{}
	}
	at := f.Last.Add(b.Delay(f.Count))
	if now.Before(at) {
		return Wait, at
	}
	return Retry, time.Time{}
}

// Delay is the wait after the n-th failure: Initial·2^(n-1), at most Max.
func (b Backoff) Delay(n int) time.Duration {
	if n <= 0 || b.Initial <= 0 {
		return 0
	}
	d := b.Initial
	for i := 1; i < n; i++ {
		if b.Max > 0 && d >= b.Max {
			break
		}
		d *= 2
	}
	if b.Max > 0 && d > b.Max {
		d = b.Max
	}
	return d
}

// failureTime is when a Failed migration failed: its Failed transition, else
// the end of its migration state, else its creation. The API keeps whole
// seconds, truncated, so the time is rounded up by a second: a backoff read from
// the API never ends early.
func failureTime(m *v1.VirtualMachineInstanceMigration) time.Time {
	at := m.CreationTimestamp.Time
	if s := m.Status.MigrationState; s != nil && s.EndTimestamp != nil {
		at = s.EndTimestamp.Time
	}
	for _, t := range m.Status.PhaseTransitionTimestamps {
		if t.Phase == v1.MigrationFailed {
			at = t.PhaseTransitionTimestamp.Time
		}
	}
	return at.Add(time.Second)
}

// failuresOf counts the failed workload-update migrations of one VMI created
// after both the VMI itself (a restarted VMI of the same name starts clean) and
// its last successful migration.
func failuresOf(vmi *VMI, finished []*Migration) Failures {
	since := vmi.Created
	for _, m := range finished {
		if m.Phase == v1.MigrationSucceeded && m.Created > since {
			since = m.Created
		}
	}
	var f Failures
	for _, m := range finished {
		if m.Phase != v1.MigrationFailed || !m.WorkloadUpdate || m.Created < since {
			continue
		}
		f.Count++
		if t := time.Unix(0, m.FailedAt); t.After(f.Last) {
			f.Last = t
		}
	}
	return f
}
