package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

func TestPlanRefusesBadInput(t *testing.T) {
	out, err := runCommand(t, NewPlanCommand())
	assertUsageError(t, out, err, "-f KUBEVIRT.yaml is required")
	out, err = runCommand(t, NewPlanCommand(), "-f", "/nonexistent/kubevirt.yaml")
	assertUsageError(t, out, err, "/nonexistent/kubevirt.yaml")
}

// Offline, against a file of the current CR: the two releases' objects are
// compared without a cluster.
func TestPlanOffline(t *testing.T) {
	dir := t.TempDir()
	env := deployid.MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.8.4"}
	cur := &v1.KubeVirt{TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "KubeVirt"},
		ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"}, Spec: v1.KubeVirtSpec{ImageTag: "v1.8.4"}}
	cfg, err := deployid.FromKubeVirt(cur, env)
	if err != nil {
		t.Fatal(err)
	}
	cur.Status = v1.KubeVirtStatus{TargetDeploymentConfig: cfg.JSON(), TargetDeploymentID: cfg.ID,
		ObservedDeploymentConfig: cfg.JSON(), ObservedDeploymentID: cfg.ID, ObservedKubeVirtVersion: cfg.KubeVirtVersion,
		TargetKubeVirtVersion: cfg.KubeVirtVersion, TargetKubeVirtRegistry: cfg.Registry, ObservedKubeVirtRegistry: cfg.Registry}
	write := func(name string, kv *v1.KubeVirt) string {
		raw, err := yaml.Marshal(kv)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	next := cur.DeepCopy()
	next.Status = v1.KubeVirtStatus{}
	next.Spec.ImageTag = "v1.9.0"
	var out bytes.Buffer
	o := planOptions{file: write("new.yaml", next), current: write("current.yaml", cur)}
	if err := runPlan(context.Background(), &out, o, env); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"Upgrade KubeVirt v1.8.4 -> v1.9.0", "Changed keys:", "kubeVirtVersion",
		"quay.io/kubevirt/virt-handler:v1.8.4 -> quay.io/kubevirt/virt-handler:v1.9.0", "1. virt-handler: DaemonSet/virt-handler (0 pods)",
		"no cluster read: no preflight"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the offline plan lacks %q:\n%s", want, out.String())
		}
	}
	cur.Status = v1.KubeVirtStatus{}
	o.current = write("bare.yaml", cur)
	err = runPlan(context.Background(), &bytes.Buffer{}, o, env)
	if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "no status.targetDeploymentConfig") {
		t.Fatalf("a current CR without status: %v", err)
	}
}

// The plan reads the delete-retained annotation of the planned CR when it has
// it (applying it sets it), else the live CR's (applying leaves it).
func TestPlanReadsTheDeleteRetainedAnnotation(t *testing.T) {
	with := func(value string) *v1.KubeVirt {
		return &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{metadata.DeleteRetainedAnnotation: value}}}
	}
	for _, tc := range []struct {
		name             string
		planned, current *v1.KubeVirt
		want             string
	}{
		{"the planned CR's", with("a.kubevirt.io"), with("b.kubevirt.io"), "a.kubevirt.io"},
		{"the planned CR clears it", with(""), with("b.kubevirt.io"), ""},
		{"the live CR's", &v1.KubeVirt{}, with("b.kubevirt.io"), "b.kubevirt.io"},
		{"a first install", &v1.KubeVirt{}, nil, ""},
	} {
		if got := deleteRetained(tc.planned, tc.current)[metadata.DeleteRetainedAnnotation]; got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
