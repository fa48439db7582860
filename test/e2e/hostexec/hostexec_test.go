// Package hostexec_test checks host-executed pods in the sandbox: Jobs whose pods
// really run, on the host, with the virt-operator binary, next to pods that kwok
// simulates.
package hostexec_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/virt-operator/virt-operator/internal/sandbox/hostexec"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
)

const ns = "default"

func job(name string, labels map[string]string, c corev1.Container) *batchv1.Job {
	c.Name = "main"
	if c.Image == "" {
		c.Image = "quay.io/kubevirt/virt-operator:v1.5.0"
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{c},
				},
			},
		},
	}
}

var hostExecLabels = map[string]string{hostexec.Label: hostexec.LabelValue}

func TestHostExecutedJobs(t *testing.T) {
	s := sandboxtest.Start(t, 2, sandboxtest.WithHostExec(t))
	cfg := s.RESTConfig()
	cfg.QPS, cfg.Burst = 50, 100
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	start := time.Now()

	jobs := []*batchv1.Job{
		// The binary, exit 0.
		job("version", hostExecLabels, corev1.Container{Args: []string{"--version"}}),
		// The binary, exit 1 with an error on stderr.
		job("fails", hostExecLabels, corev1.Container{Args: []string{"no-such-command"}}),
		// Selected by the default selector, as the install-strategy Job is; a host
		// command checking the environment it gets.
		job("env", map[string]string{"kubevirt.io": "virt-operator-strategy-dumper"}, corev1.Container{
			Command: []string{"/bin/sh", "-c", `test "$POD_NAMESPACE" = default && test -r "$KUBECONFIG" && test "$TARGET" = x && echo env ok`},
			Env: []corev1.EnvVar{
				{Name: "TARGET", Value: "x"},
				{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			},
		}),
		// Not host-executed: kwok completes it as before.
		job("simulated", map[string]string{"app": "simulated"}, corev1.Container{Image: "example/x:v1"}),
	}
	for _, j := range jobs {
		if _, err := c.BatchV1().Jobs(ns).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	normal := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "normal", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example/x:v1"}}},
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, normal, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"version", "env", "simulated"} {
		j := waitJob(ctx, t, c, name)
		if !hasCondition(j, batchv1.JobComplete) || j.Status.Succeeded != 1 {
			t.Errorf("job %s: succeeded %d, conditions %+v", name, j.Status.Succeeded, j.Status.Conditions)
		}
	}
	j := waitJob(ctx, t, c, "fails")
	if !hasCondition(j, batchv1.JobFailed) || j.Status.Failed != 1 {
		t.Errorf("job fails: failed %d, conditions %+v", j.Status.Failed, j.Status.Conditions)
	}
	t.Logf("4 Jobs finished in %s", time.Since(start).Round(100*time.Millisecond))
	for _, cond := range j.Status.Conditions {
		t.Logf("job fails: condition %s=%s reason %s: %s", cond.Type, cond.Status, cond.Reason, cond.Message)
	}

	// The failed pod carries the program's error; the successful ones ran for real.
	st := jobPod(ctx, t, c, "fails").Status
	if st.Phase != corev1.PodFailed || len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("pod of job fails: %+v", st)
	}
	term := st.ContainerStatuses[0].State.Terminated
	if term.ExitCode != 1 || !strings.Contains(term.Message, `unknown command "no-such-command"`) {
		t.Errorf("pod of job fails terminated %+v", term)
	}
	for name, want := range map[string]string{"version": "virt-operator version", "env": "env ok"} {
		p := jobPod(ctx, t, c, name)
		log, err := os.ReadFile(filepath.Join(s.Dir, "logs", hostexec.LogFileName(ns, p.Name)))
		if err != nil || !strings.Contains(string(log), want) {
			t.Errorf("log of job %s (%v):\n%s", name, err, log)
		}
	}
	p := jobPod(ctx, t, c, "simulated")
	if _, err := os.Stat(filepath.Join(s.Dir, "logs", hostexec.LogFileName(ns, p.Name))); err == nil {
		t.Error("the simulated Job's pod ran on the host")
	}

	// The normal pod stays kwok's: Running and Ready.
	got, err := c.CoreV1().Pods(ns).Get(ctx, "normal", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.PodRunning || !podReady(got) {
		t.Errorf("normal pod: phase %s, ready %v", got.Status.Phase, podReady(got))
	}

	// Stop ends the runner with the other components.
	runner := sandboxtest.Pids(t, s.Dir)["hostexec"]
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if alive(runner) {
		t.Errorf("runner (pid %d) alive after Stop", runner)
	}
}

// TestRunnerRestart kills the sandbox's runner while a host-executed pod runs: its
// process dies with it, and a new runner marks the pod Failed instead of running it
// again.
func TestRunnerRestart(t *testing.T) {
	bin, sandboxBin := sandboxtest.OperatorBinary(t), sandboxtest.SandboxBinary(t)
	s := sandboxtest.Start(t, 1, sandboxtest.WithHostExec(t))
	c, err := kubernetes.NewForConfig(s.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	pidFile := filepath.Join(t.TempDir(), "pid")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sleeper", Namespace: ns, Labels: hostExecLabels},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "example/sleeper:v1",
				// "$$$$" is the shell's "$$" after Kubernetes' $(VAR) expansion.
				Command: []string{"/bin/sh", "-c", "echo $$$$ > " + pidFile + "; exec sleep 300"}}},
		},
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var sleepPid int
	poll(t, time.Minute, "sleeper Running with its process", func() bool {
		p, err := c.CoreV1().Pods(ns).Get(ctx, "sleeper", metav1.GetOptions{})
		data, _ := os.ReadFile(pidFile)
		sleepPid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && p.Status.Phase == corev1.PodRunning && podReady(p) && sleepPid > 0
	})

	runner := sandboxtest.Pids(t, s.Dir)["hostexec"]
	if err := syscall.Kill(runner, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll(t, time.Minute, "the pod's process gone with the runner", func() bool { return !alive(sleepPid) })

	// A new runner (as if the sandbox restarted it) fails the orphaned pod.
	again := exec.Command(sandboxBin, "hostexec", "--kubeconfig="+s.Kubeconfig(), "--binary="+bin,
		"--log-dir="+filepath.Join(s.Dir, "logs"), "--work-dir="+filepath.Join(s.Dir, "hostexec"))
	againLog, err := os.Create(filepath.Join(s.Dir, "logs", "hostexec-again.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer againLog.Close()
	again.Stdout, again.Stderr = againLog, againLog
	if err := again.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = again.Process.Signal(syscall.SIGTERM)
		_ = again.Wait()
	})
	var term *corev1.ContainerStateTerminated
	poll(t, time.Minute, "sleeper Failed by the new runner", func() bool {
		p, err := c.CoreV1().Pods(ns).Get(ctx, "sleeper", metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodFailed {
			return false
		}
		term = p.Status.ContainerStatuses[0].State.Terminated
		return true
	})
	if term == nil || term.Reason != hostexec.ReasonRunnerRestarted || !strings.Contains(term.Message, "runner restarted") {
		t.Errorf("terminated %+v", term)
	}
}

func waitJob(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) *batchv1.Job {
	t.Helper()
	var j *batchv1.Job
	poll(t, 60*time.Second, "job "+name+" finished", func() bool {
		var err error
		j, err = c.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && (hasCondition(j, batchv1.JobComplete) || hasCondition(j, batchv1.JobFailed))
	})
	return j
}

func jobPod(ctx context.Context, t *testing.T, c kubernetes.Interface, job string) *corev1.Pod {
	t.Helper()
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods of job %s: %d (%v)", job, len(pods.Items), err)
	}
	return &pods.Items[0]
}

func hasCondition(j *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func poll(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// alive: the pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
