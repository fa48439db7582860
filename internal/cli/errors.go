package cli

import "github.com/virt-operator/virt-operator/internal/cliutil"

// The exit codes and errors of the virt-operator binary are package cliutil's,
// shared with virt-sandbox: main prints the returned error on one line and exits
// with ExitCode(err).
const (
	ExitOK      = cliutil.ExitOK
	ExitFailure = cliutil.ExitFailure
	ExitUsage   = cliutil.ExitUsage
)

// ExitError carries the exit code a command's failure should produce.
type ExitError = cliutil.ExitError

// UsageError marks err as bad input (exit status 2).
func UsageError(err error) error { return cliutil.UsageError(err) }

// ExitCode is the process exit status for a command's error.
func ExitCode(err error) int { return cliutil.ExitCode(err) }
