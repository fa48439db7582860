// Package run_test checks `virt-sandbox run`, the command behind `make run`, the
// way a user meets it: the real binaries in a child process, used from "a second
// shell" through the kubeconfig it prints, then Ctrl-C. The terminal shows the
// story, not the operator's log (that goes to a file), and Ctrl-C ends it cleanly.
package run_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/operator"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
)

func TestSandboxRunDeploysSampleAndCleansUpOnInterrupt(t *testing.T) {
	root := sandboxtest.RepoRoot()
	// As make build does: both binaries in one folder, virt-sandbox running the
	// virt-operator beside it for the install-strategy Job.
	binDir := t.TempDir()
	build := exec.Command("go", "build", "-o", binDir+"/", "./cmd/virt-operator", "./cmd/virt-sandbox")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the binaries: %v\n%s", err, out)
	}

	dir := filepath.Join(t.TempDir(), "sandbox")
	cmd := exec.Command(filepath.Join(binDir, "virt-sandbox"), "run", "--dir", dir, "--nodes", "3",
		"--sample", filepath.Join(root, "config", "samples", "kubevirt.yaml"),
		"--crd-dir", filepath.Join(root, "config", "crd", "bases"),
		"--vms", "4", "--non-migratable", "1", "--demo-upgrade", "v1.9.0", "--migration-duration", "300ms")
	cmd.Dir = root
	// What the terminal shows: both streams, as make run leaves them.
	term := &terminal{t: t}
	cmd.Stderr = term
	stdout, stdoutWriter := io.Pipe()
	cmd.Stdout = io.MultiWriter(stdoutWriter, term)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		_ = stdoutWriter.Close()
		exited <- err
	}()
	t.Cleanup(func() {
		// A failed test must not leak the sandbox.
		_ = cmd.Process.Signal(syscall.SIGINT)
		<-exited
	})

	lines := make(chan string, 1000)
	kubeconfig := waitForExportLine(t, stdout, lines)
	if want := filepath.Join(dir, "kubeconfig"); kubeconfig != want {
		t.Fatalf("printed KUBECONFIG=%s, want %s", kubeconfig, want)
	}

	c := clientFor(t, kubeconfig)
	ctx := context.Background()
	poll(t, ctx, "3 Ready nodes", func() (bool, error) {
		nodes := &corev1.NodeList{}
		if err := c.List(ctx, nodes); err != nil {
			return false, err
		}
		return len(nodes.Items) == 3 && allReady(nodes.Items), nil
	})
	poll(t, ctx, "the sample KubeVirt picked up", func() (bool, error) {
		kv := &v1.KubeVirt{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "kubevirt", Name: "kubevirt"}, kv); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return kv.Status.Phase != "", nil
	})
	// The demo: VMs created, the upgrade, the VMs moved, all printed.
	waitForLine(t, lines, "All 4 VMs are on the new launcher", 4*time.Minute)
	vmis := &v1.VirtualMachineInstanceList{}
	if err := c.List(ctx, vmis, client.InNamespace("default")); err != nil || len(vmis.Items) != 4 {
		t.Fatalf("%d VMIs (%v), want 4", len(vmis.Items), err)
	}
	for _, vmi := range vmis.Items {
		if !strings.Contains(vmi.Status.LauncherContainerImageVersion, "v1.9.0") {
			t.Errorf("%s runs %s after the demo upgrade", vmi.Name, vmi.Status.LauncherContainerImageVersion)
		}
	}

	// The operator's log went to its file, named once on the terminal, and
	// none of it to the terminal.
	opLog := filepath.Join(dir, "logs", "virt-operator.log")
	if st, err := os.Stat(opLog); err != nil || st.Size() == 0 {
		t.Errorf("the operator's log %s: %v, want a non-empty file", opLog, err)
	}
	if n := strings.Count(term.String(), opLog); n != 1 {
		t.Errorf("the terminal names the operator's log %s %d times, want once", opLog, n)
	}
	assertNoLogLines(t, "while running", term.String())

	pids := sandboxtest.Pids(t, dir)
	if len(pids) < 5 {
		t.Fatalf("state.json lists %d processes, want at least 5", len(pids))
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		if err != nil {
			t.Fatalf("sandbox run exited with %v after Ctrl-C", err)
		}
	case <-time.After(10 * time.Minute): // a hang, not a slow machine
		t.Fatal("sandbox run still runs 10 minutes after Ctrl-C")
	}
	// Ctrl-C ends quietly: no error, no stack trace, no log line.
	out := term.String()
	assertNoLogLines(t, "after Ctrl-C", out)
	for _, bad := range []string{"ERROR", "goroutine ", "panic", "leader election lost", "virt-sandbox:"} {
		if strings.Contains(out, bad) {
			t.Errorf("the terminal shows %q after Ctrl-C:\n%s", bad, out)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("sandbox dir %s still exists (%v)", dir, err)
	}
	// A process told to stop may still be exiting, or be an exited child not
	// yet reaped, when run returns: each must be gone within a generous wait.
	deadline := time.Now().Add(time.Minute)
	for name, pid := range pids {
		for running(pid) && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if running(pid) {
			t.Errorf("sandbox process %s (%d) still runs a minute after Ctrl-C", name, pid)
		}
	}
}

// running: pid is a process that has not exited (a zombie has).
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	return !bytes.HasPrefix(bytes.TrimSpace(rest), []byte("Z"))
}

// waitForExportLine returns the KUBECONFIG path sandbox run prints; every line of
// stdout also goes to lines.
func waitForExportLine(t *testing.T, stdout io.Reader, lines chan<- string) string {
	t.Helper()
	found := make(chan string, 1)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			select {
			case lines <- line:
			default:
			}
			if path, ok := strings.CutPrefix(line, "export KUBECONFIG="); ok {
				found <- path
			}
		}
		close(found)
	}()
	select {
	case path, ok := <-found:
		if !ok {
			t.Fatal("sandbox run exited without printing `export KUBECONFIG=`")
		}
		return path
	case <-time.After(2 * time.Minute):
		t.Fatal("no `export KUBECONFIG=` line within 2 minutes")
		return ""
	}
}

func waitForLine(t *testing.T, lines <-chan string, prefix string, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("sandbox run's output ended before %q", prefix)
			}
			if strings.HasPrefix(line, prefix) {
				return
			}
		case <-deadline:
			t.Fatalf("no line %q within %s", prefix, timeout)
		}
	}
}

func clientFor(t *testing.T, kubeconfig string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func poll(t *testing.T, ctx context.Context, what string, cond func() (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) { return cond() })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func allReady(nodes []corev1.Node) bool {
	for _, n := range nodes {
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		if !ready {
			return false
		}
	}
	return true
}

// terminal is what the user's terminal shows of the child (stdout and stderr),
// kept and sent to the test log.
type terminal struct {
	t   *testing.T
	mu  sync.Mutex
	buf strings.Builder
}

func (w *terminal) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (w *terminal) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// logLine is a line of the operator's log: zap's JSON ("level") or development
// format (a tab-separated level), or klog's header (I1202 17:50:01.123456).
var logLine = regexp.MustCompile(`"level"|\t(DEBUG|INFO|WARN|ERROR)\t|^[IWEF]\d{4} \d\d:\d\d:\d\d`)

func assertNoLogLines(t *testing.T, when, out string) {
	t.Helper()
	var logs []string
	for line := range strings.SplitSeq(out, "\n") {
		if logLine.MatchString(line) || strings.Contains(line, "INFO") || strings.Contains(line, "DEBUG") {
			logs = append(logs, line)
		}
	}
	if len(logs) > 0 {
		t.Errorf("%s the terminal shows %d log lines, want none; the first: %q", when, len(logs), logs[0])
	}
}
