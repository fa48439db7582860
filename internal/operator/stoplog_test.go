package operator

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// The manager's "leader election lost" is an error while the operator runs and
// an info line about the shutdown once its context is done; other errors stay
// errors, and names and values carry through.
func TestShutdownLoggerQuietsTheLeaseReleasedOnStop(t *testing.T) {
	var lines []string
	base := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	log := shutdownLogger(ctx, base).WithName("mgr").WithValues("k", "v")
	lost := errors.New(errLeaderElectionLost)

	log.Error(lost, "error received after stop sequence was engaged")
	cancel()
	log.Error(lost, "error received after stop sequence was engaged")
	log.Error(errors.New("boom"), "reconciler error")
	if len(lines) != 3 {
		t.Fatalf("logged %d lines: %q", len(lines), lines)
	}
	for i, want := range []struct {
		isError bool
		msg     string
	}{{true, "error received after stop sequence was engaged"}, {false, "leader election ended with the shutdown"}, {true, "reconciler error"}} {
		line := lines[i]
		if got := strings.Contains(line, `"error"=`); got != want.isError || !strings.Contains(line, want.msg) || !strings.Contains(line, `"k"="v"`) || !strings.Contains(line, "mgr") {
			t.Errorf("line %d %q: want error=%v, %q, the logger's name and values", i, line, want.isError, want.msg)
		}
	}
	if got := shutdownLogger(ctx, logr.Discard()); got.GetSink() != nil {
		t.Errorf("a discarding logger was wrapped: %v", got.GetSink())
	}
}
