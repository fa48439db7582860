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

// binary is one of the repository's commands, built once per test process.
type binary struct {
	pkg, name string
	once      sync.Once
	path      string
	err       error
}

var (
	operatorBin = &binary{pkg: "./cmd/virt-operator", name: "virt-operator"}
	sandboxBin  = &binary{pkg: "./cmd/virt-sandbox", name: "virt-sandbox"}
)

// OperatorBinary builds ./cmd/virt-operator (once per test process) into
// <repo>/.cache/test-bin/virt-operator and returns its path; a build failure fails
// the test with the compiler's output. Up links the binary into the sandbox
// directory, so a later rebuild does not affect running sandboxes.
func OperatorBinary(t testing.TB) string {
	t.Helper()
	return operatorBin.build(t)
}

// SandboxBinary builds ./cmd/virt-sandbox as OperatorBinary builds the operator:
// the binary of the sandbox's pod runner and VM simulator.
func SandboxBinary(t testing.TB) string {
	t.Helper()
	return sandboxBin.build(t)
}

// WithHostExec is a Start option running host-executed pods (package
// sandbox/hostexec) and the VM simulator with freshly built virt-sandbox and
// virt-operator binaries.
func WithHostExec(t testing.TB) func(*sandbox.Options) {
	t.Helper()
	sandboxPath, operatorPath := SandboxBinary(t), OperatorBinary(t)
	return func(o *sandbox.Options) { o.SandboxBinary, o.OperatorBinary = sandboxPath, operatorPath }
}

func (b *binary) build(t testing.TB) string {
	t.Helper()
	b.once.Do(func() { b.path, b.err = buildCommand(b.pkg, b.name) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func buildCommand(pkg, name string) (string, error) {
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
	out := filepath.Join(tmp, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the %s binary: %w\n%s", name, err, msg)
	}
	final := filepath.Join(dir, name)
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
