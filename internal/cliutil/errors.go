package cliutil

import (
	"context"
	"errors"
	"strings"
)

// Exit codes of the binaries. main prints the returned error on one line and
// exits with ExitCode(err), so commands never call os.Exit themselves and stay
// testable in-process.
const (
	ExitOK      = 0
	ExitFailure = 1 // the command ran and failed
	ExitUsage   = 2 // bad input: flags, arguments, files, objects
)

// ExitError carries the exit code a command's failure should produce.
type ExitError struct {
	Code int
	Err  error
}

// Error is the cause on a single line, because main prints it as one.
func (e *ExitError) Error() string { return oneLine(e.Err.Error()) }

func (e *ExitError) Unwrap() error { return e.Err }

// UsageError marks err as bad input (exit status 2).
func UsageError(err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: ExitUsage, Err: err}
}

// ExitCode is the process exit status for a command's error: 0 for nil, the code
// of an ExitError anywhere in the chain, else 1.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var exitErr *ExitError
	if errors.As(err, &exitErr) {
		return exitErr.Code
	}
	return ExitFailure
}

// IgnoreCanceled is err unless it is (or wraps) context.Canceled: a command
// stopped by Ctrl-C succeeded.
func IgnoreCanceled(err error) error {
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// oneLine folds a multi-line message (YAML errors have several) into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}
