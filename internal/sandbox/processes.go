package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopGrace is how long a process gets between SIGTERM and SIGKILL.
const stopGrace = 10 * time.Second

// process is a component started by this Go process. done is closed once it has
// exited and been reaped: without reaping, a killed child stays a zombie and Down
// would wait for it forever.
type process struct {
	name    string
	pid     int
	log     string
	started time.Time
	done    chan struct{}
	err     error // exit status, valid after done is closed
}

// componentGCPercent is the GOGC every component of the sandbox runs with unless
// the environment sets one. Go's default of 100 collects whenever the heap has
// doubled; kube-apiserver's heap churns through the KubeVirt CRDs' large schemas
// on every CRD write, and at 400 an install, upgrade and uninstall cost the
// sandbox less than half the CPU (70 -> 30 CPU-s measured on 3 nodes) for some
// hundreds of MB more: a throw-away cluster on a two-core machine wants the CPU.
const componentGCPercent = "400"

// componentEnv is what a component gets besides this process's environment:
// extra, and GOGC unless lookup finds one set.
func componentEnv(extra []string, lookup func(string) (string, bool)) []string {
	if _, set := lookup("GOGC"); set {
		return extra
	}
	return append([]string{"GOGC=" + componentGCPercent}, extra...)
}

// startProcess starts bin detached from this process (own process group, no stdin,
// output appended to logPath, env added to ours) so it survives the exit of `virt-sandbox up`.
func startProcess(name, bin string, args, env []string, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, pid: cmd.Process.Pid, log: logPath, started: time.Now(), done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has already exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// deathError describes an early exit, with the end of the process's log. An
// exit because a port was in use is errPortTaken too.
func (p *process) deathError() error {
	tail := tailFile(p.log, 20)
	return &earlyExit{
		msg:       fmt.Sprintf("%s exited early (%v); last lines of %s:\n%s", p.name, p.err, p.log, tail),
		portTaken: strings.Contains(tail, "address already in use"),
	}
}

// errPortTaken: a component could not bind a port freePorts had picked.
// freePorts closes its listeners before the components start, and in between
// any process on the machine may take the port (an outgoing connection gets
// one from the same range).
var errPortTaken = errors.New("a port picked for the sandbox was taken before its component bound it")

type earlyExit struct {
	msg       string
	portTaken bool
}

func (e *earlyExit) Error() string { return e.msg }

func (e *earlyExit) Is(target error) bool { return target == errPortTaken && e.portTaken }

// tailFile returns the last n lines of a file (reading at most its last 64 KiB).
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	defer f.Close()
	const maxRead = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > maxRead {
		_, _ = f.Seek(-maxRead, 2)
	}
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(f)
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePorts returns n distinct free TCP ports on 127.0.0.1. All listeners stay open
// until every port is chosen so the kernel cannot hand out the same port twice.
func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// pidAlive reports whether pid is a live (non-zombie) process still running binary.
// Checking the binary guards against killing an unrelated process that reused the
// pid of a sandbox process that died long ago.
func pidAlive(pid int, binary string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !os.IsNotExist(err)
	}
	// The state field follows the parenthesised command name.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
		return false
	}
	if binary != "" {
		if resolved, err := filepath.EvalSymlinks(binary); err == nil {
			binary = resolved
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil &&
			filepath.Base(strings.TrimSuffix(exe, " (deleted)")) != filepath.Base(binary) {
			return false
		}
	}
	return true
}

// stopPids sends SIGTERM to every process (and its process group), waits until all
// are gone and sends SIGKILL to those still alive after grace.
func stopPids(procs []procState, grace time.Duration) {
	var wg sync.WaitGroup
	for _, p := range procs {
		if !pidAlive(p.Pid, p.Binary) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			stopPid(p.Pid, p.Binary, grace)
		}()
	}
	wg.Wait()
}

func stopPid(pid int, binary string, grace time.Duration) {
	signal := func(sig syscall.Signal) {
		_ = syscall.Kill(-pid, sig) // the group: the component and anything it spawned
		_ = syscall.Kill(pid, sig)
	}
	signal(syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	killed := false
	for pidAlive(pid, binary) {
		if !killed && time.Now().After(deadline) {
			signal(syscall.SIGKILL)
			killed = true
		}
		time.Sleep(50 * time.Millisecond)
	}
}
