package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The development sandbox (kube-apiserver and kwok launchers, the pod runner, the
// VM simulator) is the virt-sandbox binary's: the operator's image must not ship
// it. `go list -deps` reads imports only, so this stays cheap.
func TestOperatorLinksNoSandbox(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps: %v\n%s", err, msg)
	}
	const sandboxPkgs = "github.com/virt-operator/virt-operator/internal/sandbox"
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), out)
	}
	for _, dep := range deps {
		if dep == sandboxPkgs || strings.HasPrefix(dep, sandboxPkgs+"/") {
			t.Errorf("cmd/virt-operator depends on %s: the sandbox belongs to cmd/virt-sandbox", dep)
		}
	}
}
