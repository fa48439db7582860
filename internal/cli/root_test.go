package cli

import (
	"strings"
	"testing"
)

func TestVersionsListsTheSupportedReleases(t *testing.T) {
	out, err := runCommand(t, NewRootCommand(), "versions")
	if err != nil {
		t.Fatal(err)
	}
	want := "LINE  CONTENT OF  FEATURE GATES    DEFAULT\nv1.9  v1.9.0      BetaOnByDefault  yes\nv1.8  v1.8.4      ListedOnly       \n"
	if out != want {
		t.Errorf("versions printed\n%s\nwant\n%s", out, want)
	}
	if _, err := runCommand(t, NewRootCommand(), "versions", "extra"); err == nil {
		t.Error("versions took an argument")
	}
}

// Upstream's Job mode is a root flag: any release's install-strategy Job runs
// `virt-operator --dump-install-strategy`. Without a config it fails as upstream
// does, before contacting any cluster.
func TestRootDumpFlagIsTheJobMode(t *testing.T) {
	t.Setenv("TARGET_DEPLOYMENT_CONFIG", "")
	out, err := runCommand(t, NewRootCommand(), "--dump-install-strategy")
	assertUsageError(t, out, err, "no config provided")
	t.Setenv("TARGET_DEPLOYMENT_CONFIG", "{")
	out, err = runCommand(t, NewRootCommand(), "--dump-install-strategy", "--kubeconfig", "/nonexistent")
	assertUsageError(t, out, err, "invalid JSON")
	help, err := runCommand(t, NewRootCommand())
	if err != nil || !strings.Contains(help, "--dump-install-strategy") {
		t.Errorf("the root command without the flag prints its help: %v %q", err, help)
	}
	if _, err := runCommand(t, NewRootCommand(), "stray"); err == nil {
		t.Error("a stray argument was accepted")
	}
}

// The development sandbox is virt-sandbox's (package sandbox/sandboxcli), not a
// command of the operator's binary.
func TestRootHasNoSandboxCommand(t *testing.T) {
	for _, c := range NewRootCommand().Commands() {
		if c.Name() == "sandbox" {
			t.Error("virt-operator has a sandbox command; it belongs to virt-sandbox")
		}
	}
}
