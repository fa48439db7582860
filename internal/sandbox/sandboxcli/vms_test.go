package sandboxcli

import (
	"path/filepath"
	"testing"

	"github.com/virt-operator/virt-operator/internal/cliutil/clitest"
)

func TestSandboxVMsCreateBadInput(t *testing.T) {
	emptyDir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"count missing", []string{"--dir", emptyDir}, "--count"},
		{"count negative", []string{"--dir", emptyDir, "--count", "-3"}, "--count"},
		{"more non-migratable than VMs", []string{"--dir", emptyDir, "--count", "2", "--non-migratable", "3"}, "--non-migratable"},
		{"negative non-migratable", []string{"--dir", emptyDir, "--count", "2", "--non-migratable", "-1"}, "--non-migratable"},
		{"no sandbox in dir", []string{"--dir", emptyDir, "--count", "2"}, "--dir"},
		{"dir missing", []string{"--dir", filepath.Join(emptyDir, "nope"), "--count", "2"}, "no sandbox"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := NewVMsCommand()
			out, err := clitest.Run(t, cmd, append([]string{"create"}, tc.args...)...)
			clitest.AssertUsageError(t, out, err, tc.want)
		})
	}
}

func TestSandboxVMSimBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no kubeconfig", nil, "--kubeconfig"},
		{"zero duration", []string{"--kubeconfig", "k", "--migration-duration", "0s"}, "--migration-duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := clitest.Run(t, NewVMSimCommand(), tc.args...)
			clitest.AssertUsageError(t, out, err, tc.want)
		})
	}
}

func TestSandboxUpAndRunRefuseZeroMigrationDuration(t *testing.T) {
	out, err := clitest.Run(t, NewRootCommand(), "up", "--dir", t.TempDir(), "--migration-duration", "0s")
	clitest.AssertUsageError(t, out, err, "--migration-duration")
	out, err = clitest.Run(t, NewRunCommand(), "--dir", t.TempDir(), "--migration-duration", "-1s")
	clitest.AssertUsageError(t, out, err, "--migration-duration")
}
