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

// BinariesEnv names a folder holding virt-operator and virt-sandbox built from
// this tree (make test-e2e sets it to bin/, which make build has just written):
// the tests use them instead of building their own, which every e2e test
// process did, a link of both per package.
const BinariesEnv = "VIRT_OPERATOR_TEST_BINARIES"

// OperatorBinary builds ./cmd/virt-operator (once per test process) into
// <repo>/.cache/test-bin/virt-operator and returns its path, or returns
// $VIRT_OPERATOR_TEST_BINARIES/virt-operator when that is set; a build failure
// (or a missing binary there) fails the test with the reason. Up links the binary
// into the sandbox directory, so a later rebuild does not affect running sandboxes.
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
	b.once.Do(func() {
		if dir := os.Getenv(BinariesEnv); dir != "" {
			b.path, b.err = prebuilt(dir, b.name)
			return
		}
		b.path, b.err = buildCommand(b.pkg, b.name)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// prebuilt is dir/name, an executable file, or an error naming what is wrong.
func prebuilt(dir, name string) (string, error) {
	path, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		return "", err
	}
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return "", fmt.Errorf("$%s=%s: %w (make build writes it)", BinariesEnv, dir, err)
	case !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("$%s=%s: %s is not an executable file", BinariesEnv, dir, path)
	}
	return path, nil
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
