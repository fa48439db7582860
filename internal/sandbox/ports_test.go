package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An early exit is a lost port only when the component says so: a bind that
// found the port in use. Any other death is not, even one that mentions a port.
func TestEarlyExitNamesALostPort(t *testing.T) {
	for _, c := range []struct {
		name, log string
		lost      bool
	}{
		{"the API server's port taken", `E1208 run.go:72] "command failed" err="failed to create listener: failed to listen on 127.0.0.1:40577: listen tcp 127.0.0.1:40577: bind: address already in use"`, true},
		{"etcd's peer port taken", `{"level":"fatal","msg":"listen tcp 127.0.0.1:35033: bind: address already in use"}`, true},
		{"another failure", `E1208 run.go:72] "command failed" err="invalid --secure-port 40577"`, false},
		{"no log at all", "", false},
	} {
		log := filepath.Join(t.TempDir(), "component.log")
		if c.log != "" {
			if err := os.WriteFile(log, []byte("# argv\n"+c.log+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		err := (&process{name: "kube-apiserver", log: log, err: errors.New("exit status 1")}).deathError()
		if got := errors.Is(err, errPortTaken); got != c.lost {
			t.Errorf("%s: lost port %v, want %v (%v)", c.name, got, c.lost, err)
		}
		if !strings.Contains(err.Error(), "kube-apiserver exited early (exit status 1)") || (c.log != "" && !strings.Contains(err.Error(), c.log)) {
			t.Errorf("%s: %q does not name the component and its last lines", c.name, err)
		}
	}
}

// A start that lost a port is made again, on new ports, a bounded number of
// times; any other failure, or the last lost port, is the answer at once.
func TestOnFreshPortsStartsAgainOnlyForALostPort(t *testing.T) {
	lost := &earlyExit{msg: "kube-apiserver exited early (exit status 1); last lines of x.log:\nbind: address already in use", portTaken: true}
	other := errors.New("etcd not ready after 30s")
	for _, c := range []struct {
		name      string
		results   []error // start's answers, in order
		wantCalls int
		want      error
	}{
		{"up at once", []error{nil}, 1, nil},
		{"up on the second ports", []error{lost, nil}, 2, nil},
		{"a lost port wrapped by a caller", []error{fmt.Errorf("starting: %w", lost), nil}, 2, nil},
		{"up on the last attempt", []error{lost, lost, nil}, 3, nil},
		{"every attempt lost a port", []error{lost, lost, lost, nil}, 3, lost},
		{"another failure is not retried", []error{other, nil}, 1, other},
		{"another failure after a lost port", []error{lost, other, nil}, 2, other},
	} {
		var log bytes.Buffer
		calls := 0
		err := onFreshPorts(portAttempts, &log, func() error {
			calls++
			return c.results[calls-1]
		})
		if calls != c.wantCalls || !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: %d starts, %v; want %d, %v", c.name, calls, err, c.wantCalls, c.want)
		}
		if retries := strings.Count(log.String(), "starting again on other ports"); retries != c.wantCalls-1 {
			t.Errorf("%s: %d lines say it starts again: %q", c.name, retries, log.String())
		}
		if strings.Contains(log.String(), "address already in use") {
			t.Errorf("%s: the log line carries the component's log: %q", c.name, log.String())
		}
	}
}
