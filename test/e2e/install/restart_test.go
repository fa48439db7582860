package install_test

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
)

// operatorProcess is the operator binary as a child process, so a test can
// kill it the hard way.
type operatorProcess struct {
	t          testing.TB
	kubeconfig string
	args       []string // more flags for `run`
	cmd        *exec.Cmd
	exited     chan struct{}
}

func (p *operatorProcess) start() {
	p.t.Helper()
	// Its webhook server on a port of its own: on the default one, the
	// operator of a test running beside this one (or of another clone on the
	// machine) has it, and this one exits.
	args := append([]string{"run", "--kubeconfig", p.kubeconfig, "--namespace", namespace,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--webhook-bind-address", sandboxtest.FreeAddr(p.t),
		"--leader-elect"}, p.args...)
	p.cmd = exec.Command(sandboxtest.OperatorBinary(p.t), args...)
	env, err := shippedOperatorEnv(os.Environ())
	if err != nil {
		p.t.Fatal(err)
	}
	p.cmd.Env = append(env, "VIRT_OPERATOR_IMAGE="+operatorImage)
	if path := os.Getenv("E2E_OPERATOR_LOG"); path != "" { // its logs, to read a timing afterwards
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			p.t.Fatal(err)
		}
		p.cmd.Stdout, p.cmd.Stderr = f, f
	}
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.exited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait()
		close(done)
	}(p.cmd, p.exited)
}

func (p *operatorProcess) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// The operator SIGKILLed at a random moment of an install and of an upgrade,
// then restarted, still converges: every step is re-derived from the cluster.
func TestOperatorKilledMidRolloutConverges(t *testing.T) {
	t.Parallel()
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("seed %d", seed)

	e := startEnvWithoutOperator(t, 3)
	p := &operatorProcess{t: t, kubeconfig: e.operatorKubeconfig()}
	p.start()
	t.Cleanup(p.kill)

	// A short bake: the kills land in the install and the upgrade's first
	// seconds, whatever the bake.
	e.createKubeVirt(v1.KubeVirtSpec{HandlerRollout: &v1.HandlerRolloutPolicy{BakeTime: &v1.Duration{Duration: 2 * time.Second}}})
	killAfter := time.Duration(rng.IntN(4000)) * time.Millisecond
	time.Sleep(killAfter)
	p.kill()
	t.Logf("killed %v into the install", killAfter)
	p.start()
	first := e.waitAvailable(3 * time.Minute)

	e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0" })
	killAfter = time.Duration(rng.IntN(4000)) * time.Millisecond
	time.Sleep(killAfter)
	p.kill()
	t.Logf("killed %v into the upgrade", killAfter)
	p.start()
	e.eventually("the upgrade to converge", 3*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		return kv.Status.ObservedDeploymentID != first.Status.ObservedDeploymentID &&
			kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID && conditionTrue(kv, v1.KubeVirtConditionAvailable), nil
	})
	if n := len(e.strategyConfigMaps()); n != 1 {
		t.Fatalf("%d strategy ConfigMaps after convergence, want 1", n)
	}
}
