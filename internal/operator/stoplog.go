package operator

import (
	"context"

	"github.com/go-logr/logr"
)

// errLeaderElectionLost is the error controller-runtime's manager reports when its
// leader elector stops.
const errLeaderElectionLost = "leader election lost"

// shutdownLogger is the manager's logger, which tells a stop from a loss. client-go
// calls OnStoppedLeading whenever its elector ends, a cancelled one too, and the
// manager turns that into the error "leader election lost", which it logs as
// "error received after stop sequence was engaged" on every clean shutdown
// (LeaderElectionReleaseOnCancel or not). Once ctx is done that is the lease
// released on the way out, logged as such at info level; before, it is a real loss
// and stays the error it is.
func shutdownLogger(ctx context.Context, base logr.Logger) logr.Logger {
	sink := base.GetSink()
	if sink == nil {
		return base
	}
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1) // this wrapper's frame
	}
	return logr.New(&shutdownSink{LogSink: sink, ctx: ctx})
}

type shutdownSink struct {
	logr.LogSink
	ctx context.Context
}

func (s *shutdownSink) Error(err error, msg string, keysAndValues ...any) {
	if err != nil && err.Error() == errLeaderElectionLost && s.ctx.Err() != nil {
		s.Info(0, "leader election ended with the shutdown", keysAndValues...)
		return
	}
	s.LogSink.Error(err, msg, keysAndValues...)
}

func (s *shutdownSink) WithValues(keysAndValues ...any) logr.LogSink {
	return &shutdownSink{LogSink: s.LogSink.WithValues(keysAndValues...), ctx: s.ctx}
}

func (s *shutdownSink) WithName(name string) logr.LogSink {
	return &shutdownSink{LogSink: s.LogSink.WithName(name), ctx: s.ctx}
}
