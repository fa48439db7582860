package cli

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/virt-operator/virt-operator/internal/deployid"
)

func runRenderCommand(t *testing.T, processEnv deployid.MapEnv, args ...string) (string, error) {
	t.Helper()
	return runCommand(t, newRenderCommand(processEnv), args...)
}

func TestRenderNames(t *testing.T) {
	sample := filepath.Join(samplesDir, "kubevirt.yaml")
	out, err := runRenderCommand(t, operatorEnvForTests, "-f", sample, "-o", "names")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if !sort.StringsAreSorted(lines) {
		t.Error("names are not sorted")
	}
	for _, want := range []string{"DaemonSet kubevirt/virt-handler", "CustomResourceDefinition virtualmachines.kubevirt.io", "ClusterRole kubevirt.io:admin"} {
		if !contains(lines, want) {
			t.Errorf("no line %q", want)
		}
	}
	if strings.Contains(out, "ServiceMonitor") || strings.Contains(out, "virt-template") {
		t.Error("a ServiceMonitor without --monitoring-namespace, or virt-template in v1.8 (the sample's release)")
	}
	// As upstream's, the strategy holds the OpenShift objects anywhere.
	for _, want := range []string{"SecurityContextConstraints kubevirt-handler", "Route kubevirt/virt-exportproxy"} {
		if !contains(lines, want) {
			t.Errorf("no line %q", want)
		}
	}
	more, err := runRenderCommand(t, operatorEnvForTests, "-f", sample, "-o", "names", "--monitoring-namespace", "monitoring", "--kubevirt-version", "v1.9.0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(more, "ServiceMonitor monitoring/prometheus-kubevirt-rules\n") {
		t.Error("no ServiceMonitor with --monitoring-namespace")
	}
	if strings.Contains(more, "virt-template") {
		t.Error("--kubevirt-version beat the CR's spec.imageTag")
	}
	v19 := writeFile(t, "apiVersion: kubevirt.io/v1\nkind: KubeVirt\nmetadata: {name: kv}\n")
	newest, err := runRenderCommand(t, operatorEnvForTests, "-f", v19, "-o", "names")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(newest, "Deployment kubevirt/virt-template-controller\n") {
		t.Error("a CR without imageTag under this operator's own image should render v1.9 (virt-template on)")
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

func TestRenderYAMLMatchesNames(t *testing.T) {
	sample := filepath.Join(samplesDir, "kubevirt.yaml")
	names, _ := runRenderCommand(t, operatorEnvForTests, "-f", sample, "-o", "names")
	out, err := runRenderCommand(t, operatorEnvForTests, "-f", sample, "--env", "VIRT_HANDLER_IMAGE=mirror.example/handler:x")
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(strings.TrimPrefix(out, "---\n"), "\n---\n")
	if len(docs) != strings.Count(names, "\n") {
		t.Errorf("%d YAML documents, %d names", len(docs), strings.Count(names, "\n"))
	}
	var first struct{ Kind string }
	if err := yaml.Unmarshal([]byte(docs[0]), &first); err != nil || first.Kind != "CustomResourceDefinition" {
		t.Errorf("first document is a %q (%v), want a CRD", first.Kind, err)
	}
	if !strings.Contains(out, "image: mirror.example/handler:x\n") {
		t.Error("--env VIRT_HANDLER_IMAGE did not reach the DaemonSet")
	}
}

func TestRenderBadInputExitsTwo(t *testing.T) {
	kv := writeFile(t, "apiVersion: kubevirt.io/v1\nkind: KubeVirt\nmetadata: {name: kv}\n")
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no -f", nil, "-f KUBEVIRT.yaml is required"},
		{"bad -o", []string{"-f", kv, "-o", "json"}, `-o "json"`},
		{"missing file", []string{"-f", filepath.Join(t.TempDir(), "absent.yaml")}, "no such file"},
		{"wrong kind", []string{"-f", writeFile(t, "apiVersion: v1\nkind: Pod\n")}, "not a kubevirt.io/v1 KubeVirt"},
		{"spec the operator rejects", []string{"-f", writeFile(t, "apiVersion: kubevirt.io/v1\nkind: KubeVirt\nspec: {imagePullPolicy: Sometimes}\n")}, `imagePullPolicy "Sometimes"`},
		{"bad monitoring namespace", []string{"-f", kv, "--monitoring-namespace", "Not_A_Namespace"}, "monitor namespace"},
		{"bad namespace", []string{"-f", kv, "--env", "POD_NAMESPACE=Bad_NS"}, `namespace "Bad_NS"`},
		{"bad --env", []string{"-f", kv, "--env", "NOEQUALS"}, `--env "NOEQUALS"`},
		{"unknown flag", []string{"--bogus"}, "unknown flag"},
		{"a release the builtin generator does not know", []string{"-f", kv, "--kubevirt-version", "v1.7.4"},
			`KubeVirt "v1.7.4": not a KubeVirt release the builtin generator knows (it knows v1.9, v1.8)`},
		{"not a version", []string{"-f", kv, "--kubevirt-version", "latest"}, `--kubevirt-version "latest" is not a KubeVirt release version`},
		{"positional argument", []string{"-f", kv, "extra"}, "takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runRenderCommand(t, operatorEnvForTests, tt.args...)
			assertUsageError(t, out, err, tt.wantErr)
		})
	}
}
