// Package clitest runs cobra commands in-process for the tests of both binaries'
// commands (packages cli and sandbox/sandboxcli).
package clitest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/virt-operator/virt-operator/internal/cliutil"
)

// Run executes cmd with args and returns what it printed on stdout. A command
// writing to stderr itself fails the test: main prints the returned error.
func Run(t testing.TB, cmd *cobra.Command, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs(args)
	err := cmd.Execute()
	if stderr.Len() > 0 {
		t.Errorf("the command wrote to stderr itself (main does that): %q", stderr.String())
	}
	return stdout.String(), err
}

// AssertUsageError fails the test unless err is bad input (exit status 2) on one
// line containing want, and nothing was printed.
func AssertUsageError(t testing.TB, out string, err error, want string) {
	t.Helper()
	if code := cliutil.ExitCode(err); code != cliutil.ExitUsage {
		t.Fatalf("exit code %d (err %v), want 2", code, err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, want) {
		t.Errorf("error %q: want one line containing %q", msg, want)
	}
	if out != "" {
		t.Errorf("printed %q on failure", out)
	}
}
