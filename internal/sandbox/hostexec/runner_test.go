package hostexec

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// shPod is a bound Pending pod whose one container runs script with /bin/sh.
func shPod(name string, labels map[string]string, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:      "node-000",
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "main", Image: "example/x:v1", Command: []string{"/bin/sh", "-c", script},
				Env: []corev1.EnvVar{{Name: "MY_NS", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

var hostExecLabels = map[string]string{Label: LabelValue}

func getPod(t *testing.T, c kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	p, err := c.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitPhase polls for the pod's phase; the timeout is generous, for a busy
// machine: it only catches a pod that never gets there.
func waitPhase(t *testing.T, c kubernetes.Interface, name string, phases ...corev1.PodPhase) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		p := getPod(t, c, name)
		for _, ph := range phases {
			if p.Status.Phase == ph {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s: phase %s, want %v; status %+v", name, p.Status.Phase, phases, p.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func terminated(t *testing.T, p *corev1.Pod) *corev1.ContainerStateTerminated {
	t.Helper()
	if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("pod %s: container statuses %+v", p.Name, p.Status.ContainerStatuses)
	}
	return p.Status.ContainerStatuses[0].State.Terminated
}

func TestRunner(t *testing.T) {
	dir := t.TempDir()
	count := filepath.Join(dir, "runs")
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-000"},
		Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.255.0.1"}}},
	}
	runningBefore := shPod("orphan", hostExecLabels, "exit 0")
	runningBefore.Status.Phase = corev1.PodRunning
	done := shPod("done", hostExecLabels, "exit 0")
	done.Status.Phase = corev1.PodSucceeded
	deadline := shPod("slow", hostExecLabels, "sleep 30")
	deadline.Spec.ActiveDeadlineSeconds = ptr.To[int64](1)
	unbound := shPod("unbound", hostExecLabels, "exit 0")
	unbound.Spec.NodeName = ""
	c := fake.NewClientset(node,
		// Succeeds, checking its environment; counts its runs.
		shPod("ok", hostExecLabels, `echo run >> `+count+`; echo hello; test "$MY_NS" = ns && test "$KUBECONFIG" = /sb/kubeconfig && test "$HOME" = "$(pwd)"`),
		// Selected by the default selector; fails with a message on stderr.
		shPod("bad", map[string]string{"kubevirt.io": "virt-operator-strategy-dumper"}, `echo progress; echo "virt-operator: no such thing" >&2; exit 3`),
		// Not host-executed: left alone.
		shPod("other", map[string]string{"app": "x"}, "echo run >> "+count),
		runningBefore, done, deadline, unbound,
		shPod("missing-env", hostExecLabels, "exit 0"),
	)
	missing := getPod(t, c, "missing-env")
	missing.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k"}}}}
	if _, err := c.CoreV1().Pods("ns").Update(context.Background(), missing, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	r, err := NewRunner(c, Options{
		Programs: Programs{Default: "/bin/false"}, Kubeconfig: "/sb/kubeconfig",
		LogDir: filepath.Join(dir, "logs"), WorkDir: filepath.Join(dir, "work"), Concurrency: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-runErr; err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-r.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("runner not ready")
	}

	ok := waitPhase(t, c, "ok", corev1.PodSucceeded, corev1.PodFailed)
	if ok.Status.Phase != corev1.PodSucceeded || terminated(t, ok).Reason != "Completed" || ok.Status.PodIP != "10.255.0.1" {
		t.Errorf("ok: %+v", ok.Status)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "logs", LogFileName("ns", "ok")))
	if !strings.Contains(string(log), "hello") || !strings.Contains(string(log), "/bin/sh -c") {
		t.Errorf("log of ok:\n%s", log)
	}

	bad := waitPhase(t, c, "bad", corev1.PodFailed, corev1.PodSucceeded)
	if st := terminated(t, bad); bad.Status.Phase != corev1.PodFailed || st.ExitCode != 3 || st.Reason != "Error" || st.Message != "virt-operator: no such thing" {
		t.Errorf("bad: phase %s, %+v", bad.Status.Phase, st)
	}

	orphan := waitPhase(t, c, "orphan", corev1.PodFailed)
	if st := terminated(t, orphan); st.Reason != ReasonRunnerRestarted || !strings.Contains(st.Message, "runner restarted") {
		t.Errorf("orphan: %+v", st)
	}

	slow := waitPhase(t, c, "slow", corev1.PodFailed, corev1.PodSucceeded)
	if st := terminated(t, slow); st.Reason != ReasonDeadlineExceeded || st.ExitCode != 137 {
		t.Errorf("slow: %+v", st)
	}

	cfgErr := waitPhase(t, c, "missing-env", corev1.PodFailed, corev1.PodSucceeded)
	if st := terminated(t, cfgErr); st.Reason != ReasonConfigError || !strings.Contains(st.Message, "absent") {
		t.Errorf("missing-env: %+v", st)
	}

	// Later events for a finished pod do not run it again. No fixed wait: a pod
	// created after the update is handled after it (one informer delivers them
	// in order), so once that pod has run, a second run of ok would have been
	// started before it.
	ok.Labels["touched"] = "yes"
	if _, err := c.CoreV1().Pods("ns").Update(ctx, ok, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods("ns").Create(ctx, shPod("marker", hostExecLabels, "echo marker >> "+count), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if marker := waitPhase(t, c, "marker", corev1.PodSucceeded, corev1.PodFailed); marker.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("marker: %+v", marker.Status)
	}
	if runs, _ := os.ReadFile(count); string(runs) != "run\nmarker\n" {
		t.Errorf("runs recorded: %q, want ok's one, then the marker's", runs)
	}
	for _, name := range []string{"other", "unbound"} {
		if p := getPod(t, c, name); p.Status.Phase != corev1.PodPending {
			t.Errorf("%s: phase %s, want Pending", name, p.Status.Phase)
		}
	}
	if p := getPod(t, c, "done"); len(p.Status.ContainerStatuses) != 0 {
		t.Errorf("finished pod touched: %+v", p.Status)
	}
}

// TestRunnerKillsOnDeleteAndShutdown: a deleted pod's process is killed, and Run
// returns once it has killed and reaped what still runs, without waiting for it
// to end on its own (the processes would sleep for an hour).
func TestRunnerKillsOnDeleteAndShutdown(t *testing.T) {
	dir := t.TempDir()
	// "$$$$" is the shell's "$$": Kubernetes expands "$$" in commands to "$".
	c := fake.NewClientset(
		shPod("deleted", hostExecLabels, "echo $$$$ > "+filepath.Join(dir, "deleted.pid")+"; exec sleep 3600"),
		shPod("kept", hostExecLabels, "echo $$$$ > "+filepath.Join(dir, "kept.pid")+"; exec sleep 3600"),
	)
	r, err := NewRunner(c, Options{Programs: Programs{Default: "/bin/false"}, LogDir: dir, WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- r.Run(ctx) }()
	pids := map[string]int{}
	for _, name := range []string{"deleted", "kept"} {
		waitPhase(t, c, name, corev1.PodRunning)
		deadline := time.Now().Add(30 * time.Second)
		for pids[name] == 0 && time.Now().Before(deadline) {
			data, _ := os.ReadFile(filepath.Join(dir, name+".pid"))
			pids[name], _ = strconv.Atoi(strings.TrimSpace(string(data)))
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := c.CoreV1().Pods("ns").Delete(ctx, "deleted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pids["deleted"])
	cancel()
	// The timeout only catches a Run that waits for its processes to end on
	// their own (an hour); how fast it stops is not measured.
	select {
	case err := <-runErr:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("Run has not returned a minute after its context ended; kept process alive: %v", alive(pids["kept"]))
	}
	if alive(pids["kept"]) {
		t.Errorf("Run returned with the kept pod's process %d still running", pids["kept"])
	}
	// Shutting down leaves the pod Running for the next runner to fail.
	if p := getPod(t, c, "kept"); p.Status.Phase != corev1.PodRunning {
		t.Errorf("kept: phase %s after shutdown", p.Status.Phase)
	}
}

// alive: the process exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	return err == nil && !strings.Contains(string(stat), ") Z ")
}

// waitGone waits for the process to end; the timeout is generous, for a busy
// machine, as it only catches a process never killed.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	if pid == 0 {
		t.Fatal("no pid recorded")
	}
	deadline := time.Now().Add(30 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
