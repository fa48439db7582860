package cli

import (
	"crypto/sha1" //nolint:gosec
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/virt-operator/virt-operator/internal/cliutil/clitest"
	"github.com/virt-operator/virt-operator/internal/deployid"
)

var samplesDir = filepath.Join("..", "..", "config", "samples")

// runDeploymentIDCommand runs the command in-process with processEnv as the
// operator's environment and returns stdout and the error main would see.
func runDeploymentIDCommand(t *testing.T, processEnv deployid.MapEnv, args ...string) (string, error) {
	t.Helper()
	return runCommand(t, newDeploymentIDCommand(processEnv), args...)
}

// runCommand executes cmd in-process and returns stdout and the error main
// would see; a command must not write to stderr itself.
func runCommand(t *testing.T, cmd *cobra.Command, args ...string) (string, error) {
	t.Helper()
	return clitest.Run(t, cmd, args...)
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kv.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var operatorEnvForTests = deployid.MapEnv{"VIRT_OPERATOR_IMAGE": "ghcr.io/virt-operator/virt-operator:devel", "HOME": "/root"}

func TestDeploymentIDOnSamples(t *testing.T) {
	for _, sample := range []string{"kubevirt.yaml", "kubevirt-customized.yaml"} {
		t.Run(sample, func(t *testing.T) {
			path := filepath.Join(samplesDir, sample)
			id, err := runDeploymentIDCommand(t, operatorEnvForTests, "-f", path)
			if err != nil {
				t.Fatalf("deployment-id: %v", err)
			}
			if !regexp.MustCompile(`^[0-9a-f]{40}\n$`).MatchString(id) {
				t.Fatalf("output %q is not one ID line", id)
			}
			canonical, err := runDeploymentIDCommand(t, operatorEnvForTests, "-f", path, "-o", "json")
			if err != nil {
				t.Fatalf("deployment-id -o json: %v", err)
			}
			sum := sha1.Sum([]byte(strings.TrimSuffix(canonical, "\n"))) //nolint:gosec
			if hex.EncodeToString(sum[:])+"\n" != id {
				t.Errorf("the ID is not the SHA-1 of the -o json output")
			}
		})
	}
}

func TestDeploymentIDEnvOverridesProcessEnv(t *testing.T) {
	path := filepath.Join(samplesDir, "kubevirt.yaml")
	process := deployid.MapEnv{"VIRT_OPERATOR_IMAGE": "r/virt-operator:v1", "VIRT_HANDLER_IMAGE": "r/handler:a"}
	fromProcess, _ := runDeploymentIDCommand(t, process, "-f", path)
	overridden, _ := runDeploymentIDCommand(t, process, "-f", path, "--env", "VIRT_HANDLER_IMAGE=r/handler:b")
	processB := deployid.MapEnv{"VIRT_OPERATOR_IMAGE": "r/virt-operator:v1", "VIRT_HANDLER_IMAGE": "r/handler:b"}
	wantB, _ := runDeploymentIDCommand(t, processB, "-f", path)
	if fromProcess == overridden || overridden != wantB {
		t.Errorf("--env does not override the process environment: %q %q %q", fromProcess, overridden, wantB)
	}
	out, err := runDeploymentIDCommand(t, process, "-f", path, "-o", "json", "--env", "KV_IO_EXTRA_ENV_X=a=b")
	if err != nil || !strings.Contains(out, `"passthroughEnvVars":{"X":"a=b"}`) {
		t.Errorf("pass-through value with '=' not kept whole: %v %s", err, out)
	}
}

func TestDeploymentIDNamespaceDefault(t *testing.T) {
	path := writeFile(t, "apiVersion: kubevirt.io/v1\nkind: KubeVirt\nmetadata: {name: kv}\nspec: {}\n")
	out, err := runDeploymentIDCommand(t, deployid.MapEnv{}, "-f", path, "-o", "json")
	if err != nil || !strings.Contains(out, `"namespace":"kubevirt"`) {
		t.Errorf("namespace default: %v %s", err, out)
	}
	out, err = runDeploymentIDCommand(t, deployid.MapEnv{}, "-f", path, "-o", "json", "--env", "POD_NAMESPACE=virt")
	if err != nil || !strings.Contains(out, `"namespace":"virt"`) {
		t.Errorf("POD_NAMESPACE: %v %s", err, out)
	}
}

func TestDeploymentIDIgnoresUnknownFields(t *testing.T) {
	path := writeFile(t, "apiVersion: kubevirt.io/v1\nkind: KubeVirt\nmetadata: {name: kv, namespace: kubevirt}\nspec: {notAField: 1}\nextra: true\n")
	if _, err := runDeploymentIDCommand(t, operatorEnvForTests, "-f", path); err != nil {
		t.Fatalf("unknown fields rejected: %v", err)
	}
}

func TestDeploymentIDBadInputExitsTwo(t *testing.T) {
	kv := "apiVersion: kubevirt.io/v1\nkind: KubeVirt\nmetadata: {name: kv}\n"
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"missing file", []string{"-f", filepath.Join(t.TempDir(), "absent.yaml")}, "no such file"},
		{"invalid YAML", []string{"-f", writeFile(t, "spec: [unclosed\n  other: {")}, "not valid YAML"},
		{"wrong kind", []string{"-f", writeFile(t, "apiVersion: apps/v1\nkind: Deployment\n")}, `holds kind "Deployment" of apiVersion "apps/v1", not a kubevirt.io/v1 KubeVirt`},
		{"wrong apiVersion", []string{"-f", writeFile(t, "apiVersion: kubevirt.io/v1alpha3\nkind: KubeVirt\n")}, "not a kubevirt.io/v1 KubeVirt"},
		{"empty file", []string{"-f", writeFile(t, "")}, "does not hold a Kubernetes object"},
		{"a list, not an object", []string{"-f", writeFile(t, "- a\n- b\n")}, "does not hold a Kubernetes object"},
		{"wrong field type", []string{"-f", writeFile(t, kv+"spec: {infra: {replicas: many}}\n")}, "not a valid KubeVirt"},
		{"spec the operator rejects", []string{"-f", writeFile(t, kv+"spec: {imagePullPolicy: Sometimes}\n")}, `imagePullPolicy "Sometimes"`},
		{"no -f", nil, "-f KUBEVIRT.yaml is required"},
		{"bad -o", []string{"-f", writeFile(t, kv), "-o", "yaml"}, `-o "yaml"`},
		{"bad --env", []string{"-f", writeFile(t, kv), "--env", "NOEQUALS"}, `--env "NOEQUALS"`},
		{"unknown flag", []string{"--bogus"}, "unknown flag"},
		{"positional argument", []string{"-f", writeFile(t, kv), "extra"}, "takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runDeploymentIDCommand(t, operatorEnvForTests, tt.args...)
			assertUsageError(t, out, err, tt.wantErr)
		})
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("boom"), 1},
		{UsageError(errors.New("bad")), 2},
		{fmt.Errorf("wrapped: %w", UsageError(errors.New("bad"))), 2},
		{&ExitError{Code: 3, Err: errors.New("x")}, 3},
	}
	for _, tt := range tests {
		if got := ExitCode(tt.err); got != tt.want {
			t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
	if UsageError(nil) != nil {
		t.Error("UsageError(nil) is not nil")
	}
	if got := UsageError(errors.New("line one\n  line two")).Error(); got != "line one line two" {
		t.Errorf("multi-line error printed as %q", got)
	}
}

// assertUsageError checks a bad-input failure: exit status 2, one line naming
// the problem, nothing printed.
func assertUsageError(t *testing.T, out string, err error, want string) {
	t.Helper()
	clitest.AssertUsageError(t, out, err, want)
}
