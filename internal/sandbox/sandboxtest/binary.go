package sandboxtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/virt-operator/virt-operator/internal/sandbox"
)

var (
	buildOnce  sync.Once
	builtPath  string
	buildError error
)

// OperatorBinary builds ./cmd/virt-operator (once per test process) into
// <repo>/.cache/test-bin/virt-operator and returns its path; a build failure fails
// the test with the compiler's output. Up links the binary into the sandbox
// directory, so a later rebuild does not affect running sandboxes.
func OperatorBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() { builtPath, buildError = buildOperator() })
	if buildError != nil {
		t.Fatal(buildError)
	}
	return builtPath
}

// WithHostExec is a Start option running host-executed pods (package
// sandbox/hostexec) with a freshly built virt-operator binary.
func WithHostExec(t testing.TB) func(*sandbox.Options) {
	t.Helper()
	bin := OperatorBinary(t)
	return func(o *sandbox.Options) { o.OperatorBinary = bin }
}

func buildOperator() (string, error) {
	root := RepoRoot()
	dir := filepath.Join(root, ".cache", "test-bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Build beside the target and rename: test processes of other packages may
	// build at the same time.
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	out := filepath.Join(tmp, "virt-operator")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/virt-operator")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the virt-operator binary: %w\n%s", err, msg)
	}
	final := filepath.Join(dir, "virt-operator")
	if err := os.Rename(out, final); err != nil {
		return "", err
	}
	return final, nil
}

// WithMigrationDuration is a Start option setting how long the sandbox's VM
// simulator (package sandbox/vmsim, running whenever WithHostExec is given and the
// CRDs define the VM kinds) takes per live migration.
func WithMigrationDuration(d time.Duration) func(*sandbox.Options) {
	return func(o *sandbox.Options) { o.MigrationDuration = d }
}
