package install_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
	"github.com/virt-operator/virt-operator/internal/sandbox/vmsim"
)

// plan runs `virt-operator plan` against the sandbox for spec.
func (e *env) plan(t *testing.T, spec v1.KubeVirtSpec) (string, int) {
	t.Helper()
	kv := v1.KubeVirt{TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "KubeVirt"},
		ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: namespace}, Spec: spec}
	raw, err := yaml.Marshal(kv)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "kubevirt.yaml")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sandboxtest.OperatorBinary(t), "plan", "-f", file, "--kubeconfig", e.sb.Kubeconfig()).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return string(out), 0
}

var estimateLine = regexp.MustCompile(`Estimate: ([0-9hms.]+) for the control plane`)

// Three upgrades, each planned first: the plan names the canary node, every
// restarting pod and the VMIs that would move, and an estimate; the estimate
// against the upgrade that follows is logged (how long an upgrade takes is the
// machine's speed, not a behaviour). Bad input exits 2.
func TestPlanBeforeEachUpgrade(t *testing.T) {
	t.Parallel()
	const nodes, vms = 10, 12
	const bake = 3 * time.Second
	e := startEnv(t, nodes, sandboxtest.WithMigrationDuration(300*time.Millisecond))
	spec := v1.KubeVirtSpec{ImageTag: "v1.8.4",
		WorkloadUpdates: &v1.WorkloadUpdatePolicy{Methods: []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate}},
		HandlerRollout:  &v1.HandlerRolloutPolicy{BakeTime: &v1.Duration{Duration: bake}}}
	e.createKubeVirt(spec)
	oldImage := launcherImage(e.waitAvailable(3 * time.Minute))
	vc, err := vmsim.NewClient(e.sb.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	names := e.createGroup(vc, "planned", vms, nil, nil)
	waitCtx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := vmsim.WaitRunning(waitCtx, vc, vmNamespace, names, oldImage); err != nil {
		t.Fatal(err)
	}

	if out, code := e.plan(t, v1.KubeVirtSpec{ImageTag: "v7.0.0"}); code != 2 || !strings.Contains(out, "v7.0.0") {
		t.Fatalf("a release this build cannot render: exit %d\n%s", code, out)
	}
	var summary []string
	for i, tag := range []string{"v1.9.0", "v1.9.1", "v1.9.2"} {
		next := *spec.DeepCopy()
		next.ImageTag = tag
		out, code := e.plan(t, next)
		if code != 0 {
			t.Fatalf("plan %s exited %d:\n%s", tag, code, out)
		}
		for _, want := range []string{"Upgrade KubeVirt", "-> " + tag, "Changed keys:", "virt-handler: DaemonSet/virt-handler (10 pods)",
			"canary on node-", "VMIs, moved by virt-operator: 12 migrate", "ok   CRDStoredVersions", "ok   KubernetesVersion"} {
			if !strings.Contains(out, want) {
				t.Fatalf("plan %s lacks %q:\n%s", tag, want, out)
			}
		}
		if i == 0 {
			t.Logf("plan for %s:\n%s", tag, out)
		}
		m := estimateLine.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no estimate in:\n%s", out)
		}
		est, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = tag })
		e.eventually(tag+" observed", 5*time.Minute, func() (bool, error) {
			kv := e.kubeVirt()
			return kv.Status.ObservedKubeVirtVersion == tag && kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID, nil
		})
		took := time.Since(start)
		if pf := e.kubeVirt().Status.Preflight; pf == nil || pf.TargetID != e.kubeVirt().Status.TargetDeploymentID || len(pf.Checks) < 4 {
			t.Errorf("%s: preflight %+v, want every check of this target", tag, pf)
		} else {
			for _, c := range pf.Checks {
				if c.State != "Passed" {
					t.Errorf("%s: preflight check %s %s: %s", tag, c.Name, c.State, c.Message)
				}
			}
		}
		summary = append(summary, fmt.Sprintf("%s: estimate %s, measured %s (ratio %.2f)", tag, est, took.Round(100*time.Millisecond), took.Seconds()/est.Seconds()))
		// What holds on any machine: the canary bakes before the rollout widens,
		// so no upgrade is observed sooner than the bake after it was asked for.
		if took < bake {
			t.Errorf("%s observed %s after the spec changed, before the canary's bake time %s", tag, took, bake)
		}
		e.eventually("the VMIs moved", 3*time.Minute, func() (bool, error) { return outdated(e.kubeVirt()) == 0, nil })
	}
	t.Logf("estimates against the upgrades that followed:\n  %s", strings.Join(summary, "\n  "))
}
