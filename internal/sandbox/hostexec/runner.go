package hostexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// Defaults of Options.
const (
	DefaultTimeout     = 10 * time.Minute
	DefaultConcurrency = 4
)

// Options configure a Runner.
type Options struct {
	// Programs maps container images to host programs (Default: the virt-operator binary).
	Programs Programs
	// Selectors: see NewMatcher (nil: DefaultSelectors).
	Selectors []string
	// Kubeconfig is exported as KUBECONFIG to every process.
	Kubeconfig string
	// PodCredentials: each pod's processes get a kubeconfig of their own (in the
	// pod's work directory), Kubeconfig's server with a token of the pod's
	// ServiceAccount, so they run with exactly that account's RBAC, as in a pod.
	PodCredentials bool
	// LogDir receives one log per pod, LogFileName(namespace, pod), holding the
	// processes' stdout and stderr.
	LogDir string
	// WorkDir holds one working directory (and HOME) per pod, NAMESPACE-POD.
	WorkDir string
	// Timeout bounds each pod's run (a shorter spec.activeDeadlineSeconds wins);
	// pods with restartPolicy Always have none. Default DefaultTimeout.
	Timeout time.Duration
	// Concurrency bounds the pods run at once; the others wait, Pending. Default
	// DefaultConcurrency.
	Concurrency int
	// Log receives the runner's own messages; nil discards them.
	Log *slog.Logger
	// GOGC, when set, is every process's GOGC unless its container sets one
	// (see WithGOGC); empty: the programs' own default.
	GOGC string
}

// LogFileName is the name, in Options.LogDir, of the log of a pod's processes.
func LogFileName(namespace, pod string) string {
	return "hostexec-" + namespace + "-" + pod + ".log"
}

// Runner executes host-executed pods (see the package documentation).
type Runner struct {
	client  kubernetes.Interface
	o       Options
	matcher *Matcher
	sem     chan struct{}
	ready   chan struct{}
	log     *slog.Logger

	mu      sync.Mutex
	seen    map[types.UID]bool               // pods handled (run, running or left alone)
	cancels map[types.UID]context.CancelFunc // pods whose processes run or wait for a slot
	wg      sync.WaitGroup
	ctx     context.Context // Run's context, set before informers start
}

// NewRunner checks o and returns a Runner; Run starts it.
func NewRunner(client kubernetes.Interface, o Options) (*Runner, error) {
	m, err := NewMatcher(o.Selectors)
	if err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.LogDir == "" || o.WorkDir == "" {
		return nil, errors.New("hostexec: LogDir and WorkDir are required")
	}
	for _, d := range []string{o.LogDir, o.WorkDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{
		client: client, o: o, matcher: m, log: log,
		sem:     make(chan struct{}, o.Concurrency),
		ready:   make(chan struct{}),
		seen:    map[types.UID]bool{},
		cancels: map[types.UID]context.CancelFunc{},
	}, nil
}

// Ready is closed once the runner watches pods (its informers have synced).
func (r *Runner) Ready() <-chan struct{} { return r.ready }

// Run watches pods cluster-wide, one informer per selector of the Matcher, until ctx
// ends; then it kills the processes still running and returns once they are gone.
// (client-go's informers retry failed lists and watches for ever, so Run has no
// error of its own after start-up; Ready tells when it watches.)
// Their pods keep phase Running: a runner started later fails them ("runner
// restarted").
func (r *Runner) Run(ctx context.Context) error {
	r.ctx = ctx
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.handle(obj) },
		UpdateFunc: func(_, obj any) { r.handle(obj) },
		DeleteFunc: func(obj any) { r.deleted(obj) },
	}
	var synced []cache.InformerSynced
	var factories []informers.SharedInformerFactory
	for _, sel := range r.matcher.Selectors() {
		f := informers.NewSharedInformerFactoryWithOptions(r.client, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }))
		inf := f.Core().V1().Pods().Informer()
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
		synced = append(synced, inf.HasSynced)
		factories = append(factories, f)
	}
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	defer func() {
		for _, f := range factories {
			f.Shutdown()
		}
		r.wg.Wait()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil // stopped before the informers synced
	}
	r.log.Info("watching host-executed pods", "selectors", r.matcher.Selectors(), "program", r.o.Programs.Default, "concurrency", r.o.Concurrency)
	close(r.ready)
	<-ctx.Done()
	return nil
}

// handle decides what a pod event means: a bound Pending pod not seen before is run;
// a Running one not seen before was started by an earlier runner and is failed; a
// pod being deleted has its processes killed.
func (r *Runner) handle(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !r.matcher.Matches(pod) {
		return
	}
	if pod.DeletionTimestamp != nil {
		r.cancel(pod.UID)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[pod.UID] || r.ctx.Err() != nil {
		return
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		r.seen[pod.UID] = true
	case corev1.PodRunning:
		r.seen[pod.UID] = true
		r.goTrack(func() { r.failRestarted(pod) })
	default: // Pending
		if pod.Spec.NodeName == "" {
			return // the scheduler has not bound it yet
		}
		r.seen[pod.UID] = true
		ctx, cancel := context.WithCancel(r.ctx)
		r.cancels[pod.UID] = cancel
		r.goTrack(func() {
			defer r.cancel(pod.UID)
			r.run(ctx, pod)
		})
	}
}

func (r *Runner) goTrack(f func()) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		f()
	}()
}

func (r *Runner) deleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		r.cancel(pod.UID)
	}
}

// cancel kills the processes of a pod (or drops it from the queue).
func (r *Runner) cancel(uid types.UID) {
	r.mu.Lock()
	cancel := r.cancels[uid]
	delete(r.cancels, uid)
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (r *Runner) failRestarted(pod *corev1.Pod) {
	now := metav1.Now()
	err := r.updateStatus(r.ctx, pod, func(p *corev1.Pod) bool {
		if p.Status.Phase != corev1.PodRunning {
			return false
		}
		SetTerminated(p, now, RestartedResults(p, now))
		return true
	})
	r.logResult(pod, "failed: found Running without its process (runner restarted)", err)
}

// run executes one pod: waits for a slot, marks it Running, runs its containers and
// records how they ended.
func (r *Runner) run(ctx context.Context, pod *corev1.Pod) {
	select {
	case r.sem <- struct{}{}:
		defer func() { <-r.sem }()
	case <-ctx.Done():
		return
	}
	now := metav1.Now()
	if len(pod.Spec.InitContainers) > 0 {
		r.fail(pod, now, ReasonConfigError, "init containers are not supported by the sandbox's host exec")
		return
	}
	hostIP := r.nodeIP(ctx, pod.Spec.NodeName)
	// Resolve every command before the pod turns Running, with the status it will have.
	planned := pod.DeepCopy()
	SetRunning(planned, now, hostIP)
	cmds, err := r.commands(ctx, planned)
	if err != nil {
		r.fail(pod, now, ReasonConfigError, err.Error())
		return
	}
	var running *corev1.Pod
	err = r.updateStatus(ctx, pod, func(p *corev1.Pod) bool {
		if p.Status.Phase != corev1.PodPending && p.Status.Phase != "" || p.DeletionTimestamp != nil {
			return false
		}
		SetRunning(p, now, hostIP)
		running = p
		return true
	})
	if err != nil || running == nil {
		r.logResult(pod, "not started", err)
		return
	}
	timeout := r.o.Timeout
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil && time.Duration(*d)*time.Second < timeout {
		timeout = time.Duration(*d) * time.Second
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if pod.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		runCtx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	r.log.Info("running", "pod", klogKey(pod), "uid", pod.UID, "timeout", timeout)
	results := make([]Result, len(cmds))
	var wg sync.WaitGroup
	for i, c := range cmds {
		wg.Go(func() { results[i] = r.exec(runCtx, pod, c, timeout, len(cmds) > 1) })
	}
	wg.Wait()
	if r.ctx.Err() != nil {
		return // shutting down: a later runner fails the pod
	}
	fin := metav1.Now()
	// A deleted pod may be gone already; its status no longer matters.
	uctx, ucancel := context.WithTimeout(r.ctx, 30*time.Second)
	defer ucancel()
	err = r.updateStatus(uctx, pod, func(p *corev1.Pod) bool {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return false
		}
		SetTerminated(p, fin, results)
		return true
	})
	outcome := "succeeded"
	for _, res := range results {
		if res.ExitCode != 0 {
			outcome = fmt.Sprintf("failed: container %s exited %d (%s): %s", res.Container, res.ExitCode, res.Reason, res.Message)
			break
		}
	}
	r.logResult(pod, outcome, err)
}

// command is one container's host process.
type command struct {
	container string
	argv, env []string
	dir       string
}

func (r *Runner) commands(ctx context.Context, pod *corev1.Pod) ([]command, error) {
	dir := filepath.Join(r.o.WorkDir, pod.Namespace+"-"+pod.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	kubeconfig := r.o.Kubeconfig
	if r.o.PodCredentials && kubeconfig != "" {
		var err error
		if kubeconfig, err = r.podKubeconfig(ctx, pod, dir); err != nil {
			return nil, err
		}
	}
	src := r.envSource(ctx, pod.Namespace)
	var cmds []command
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		program, mapped, err := r.o.Programs.Program(c.Image)
		if err != nil {
			return nil, fmt.Errorf("container %s: %w", c.Name, err)
		}
		cenv, vars, err := ContainerEnv(pod, c, src)
		if err != nil {
			return nil, err
		}
		argv := Argv(c, program, vars)
		if mapped {
			argv = append(argv, "--kubeconfig="+kubeconfig)
		}
		cmds = append(cmds, command{
			container: c.Name,
			argv:      argv,
			env:       WithGOGC(ProcessEnv(pod.Name, dir, kubeconfig, cenv), r.o.GOGC),
			dir:       dir,
		})
	}
	return cmds, nil
}

func (r *Runner) envSource(ctx context.Context, namespace string) EnvSource {
	return func(kind, name string) (map[string]string, error) {
		switch kind {
		case "ConfigMap":
			cm, err := r.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			data := map[string]string{}
			for k, v := range cm.BinaryData {
				data[k] = string(v)
			}
			for k, v := range cm.Data {
				data[k] = v
			}
			return data, nil
		case "Secret":
			s, err := r.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			data := map[string]string{}
			for k, v := range s.Data {
				data[k] = string(v)
			}
			for k, v := range s.StringData {
				data[k] = v
			}
			return data, nil
		}
		return nil, fmt.Errorf("unknown kind %s", kind)
	}
}

// exec runs one container's process, its output appended to the pod's log.
func (r *Runner) exec(ctx context.Context, pod *corev1.Pod, c command, timeout time.Duration, several bool) Result {
	res := Result{Container: c.container, StartedAt: metav1.Now()}
	finish := func(code int32, reason, msg string) Result {
		res.ExitCode, res.Reason, res.Message, res.FinishedAt = code, reason, msg, metav1.Now()
		return res
	}
	name := LogFileName(pod.Namespace, pod.Name)
	if several {
		name = strings.TrimSuffix(name, ".log") + "-" + c.container + ".log"
	}
	logFile, err := os.OpenFile(filepath.Join(r.o.LogDir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return finish(128, ReasonStartError, err.Error())
	}
	defer func() { _ = logFile.Close() }()
	_, _ = fmt.Fprintf(logFile, "# %s pod %s uid %s container %s: %s\n",
		time.Now().Format(time.RFC3339), klogKey(pod), pod.UID, c.container, strings.Join(c.argv, " "))

	cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
	cmd.Env, cmd.Dir = c.env, c.dir
	stderr := &tailBuffer{}
	cmd.Stdout = logFile
	cmd.Stderr = io.MultiWriter(logFile, stderr)
	// Own process group, so a timeout or deletion kills what the program spawned;
	// SIGKILL if the runner dies, so no process outlives it unseen (see "runner
	// restarted").
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		_, _ = fmt.Fprintf(logFile, "# start failed: %v\n", err)
		return finish(128, ReasonStartError, err.Error())
	}
	err = cmd.Wait()
	code := int32(cmd.ProcessState.ExitCode())
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		code = 128 + int32(ws.Signal())
	}
	_, _ = fmt.Fprintf(logFile, "# exited %d (%v)\n", code, err)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return finish(137, ReasonDeadlineExceeded, fmt.Sprintf("killed after %s", timeout))
	case code == 0: // err may be exec.ErrWaitDelay: a child it left holds the output open
		return finish(0, "Completed", "")
	}
	msg := stderr.lastLine()
	if msg == "" {
		msg = fmt.Sprintf("exit code %d", code)
	}
	return finish(code, "Error", msg)
}

// fail marks a pod Failed before it ran (its commands could not be built).
func (r *Runner) fail(pod *corev1.Pod, now metav1.Time, reason, msg string) {
	err := r.updateStatus(r.ctx, pod, func(p *corev1.Pod) bool {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return false
		}
		var rs []Result
		for _, c := range p.Spec.Containers {
			rs = append(rs, Result{Container: c.Name, ExitCode: 128, Reason: reason, Message: msg, StartedAt: now, FinishedAt: now})
		}
		SetTerminated(p, now, rs)
		return true
	})
	r.logResult(pod, "failed: "+msg, err)
}

// errSkip ends updateStatus without writing: the pod moved on meanwhile.
var errSkip = errors.New("skip")

// statusBackoff spaces the attempts of one status write (about 10 s in all): a
// write that never lands would leave the pod unrun or Running for ever, since the
// runner does not handle a pod twice.
var statusBackoff = wait.Backoff{Steps: 7, Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1}

// updateStatus reads the pod, applies mutate and writes its status, retrying on
// conflicts and other errors. mutate returning false writes nothing. A pod gone, or
// replaced by another with the same name, is not an error.
func (r *Runner) updateStatus(ctx context.Context, pod *corev1.Pod, mutate func(*corev1.Pod) bool) error {
	retriable := func(err error) bool {
		return !errors.Is(err, errSkip) && !apierrors.IsNotFound(err) && ctx.Err() == nil
	}
	err := retry.OnError(statusBackoff, retriable, func() error {
		cur, err := r.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != pod.UID || !mutate(cur) {
			return errSkip
		}
		_, err = r.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if errors.Is(err, errSkip) {
		return errSkip
	}
	if apierrors.IsNotFound(err) {
		return errSkip
	}
	return err
}

func (r *Runner) logResult(pod *corev1.Pod, what string, err error) {
	switch {
	case errors.Is(err, errSkip):
		r.log.Info("pod changed meanwhile, status left alone", "pod", klogKey(pod), "uid", pod.UID, "outcome", what)
	case err != nil:
		r.log.Error("writing pod status", "pod", klogKey(pod), "uid", pod.UID, "outcome", what, "err", err)
	default:
		r.log.Info(what, "pod", klogKey(pod), "uid", pod.UID)
	}
}

// nodeIP is the node's InternalIP, "" if unknown.
func (r *Runner) nodeIP(ctx context.Context, name string) string {
	n, err := r.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

func klogKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }

// tailBuffer keeps the end of a stream, for the last line a process wrote.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailKeep = 8 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*tailKeep {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailKeep:]...)
	}
	return len(p), nil
}

// maxMessage bounds a termination message, as a kubelet's 4 KiB limit does.
const maxMessage = 4096

// lastLine is the last non-blank line written, at most maxMessage bytes.
func (t *tailBuffer) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := bytes.Split(bytes.TrimRight(t.buf, "\r\n\t "), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(string(lines[i])); l != "" {
			if len(l) > maxMessage {
				l = l[len(l)-maxMessage:]
			}
			return l
		}
	}
	return ""
}
