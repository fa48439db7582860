package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/config/manager"
	"github.com/virt-operator/virt-operator/internal/sandbox"
)

const (
	// UpstreamOperatorNamespace is where upstream's operator runs outside a pod,
	// and so where its KubeVirt CR and components live.
	UpstreamOperatorNamespace = "kubevirt"
	// UpstreamOperatorAccount is the ServiceAccount upstream's manifest runs its
	// operator, and its install-strategy Job, as.
	UpstreamOperatorAccount = "kubevirt-operator"
	// upstreamWebhookPort and upstreamHealthPort are what upstream's operator binds
	// on every address.
	upstreamWebhookPort = 8444
	upstreamHealthPort  = 8186
	// hostPortsWait bounds the wait for those ports without a network namespace.
	hostPortsWait = 3 * time.Minute
	// controlPlaneLabel places upstream's virt-api and virt-controller.
	controlPlaneLabel = "node-role.kubernetes.io/control-plane"
)

// UpstreamOperatorImage is the image KubeVirt's operator of version takes to be
// its own (VIRT_OPERATOR_IMAGE): its install-strategy Job runs it.
func UpstreamOperatorImage(version string) string {
	return "quay.io/kubevirt/virt-operator:" + version
}

// WithUpstreamOperator is a Start option for sandboxes that StartUpstreamOperator
// will run versions on: host-executed pods (WithHostExec), and the Job runner
// running UpstreamOperatorImage(version) with upstream's own binary of that
// version. Without KubeVirt's binaries the test is skipped (UpstreamBinary).
func WithUpstreamOperator(t testing.TB, versions ...string) func(*sandbox.Options) {
	t.Helper()
	hostExec := WithHostExec(t)
	images := map[string]string{}
	for _, v := range versions {
		// The file is named virt-operator, as the Job's command is.
		images[UpstreamOperatorImage(v)] = UpstreamBinary(t, v, "virt-operator")
	}
	return func(o *sandbox.Options) {
		hostExec(o)
		if o.HostExecImages == nil {
			o.HostExecImages = map[string]string{}
		}
		for image, bin := range images {
			o.HostExecImages[image] = bin
		}
	}
}

// UpstreamOperator is KubeVirt's own virt-operator of one release running as a
// host process against a sandbox:
//
//	sb := sandboxtest.Start(t, 3, sandboxtest.WithUpstreamOperator(t, "v1.9.0"))
//	u := sandboxtest.StartUpstreamOperator(t, sb, "v1.9.0") // u.LogPath; u.Stop()
//
// StartUpstreamOperator runs the virt-operator binary of the release (from
// UpstreamBinary) the way upstream's manifest runs it in its pod, with what that
// pod would have:
//
//   - its identity: the ServiceAccount kubevirt/kubevirt-operator, through a token
//     in a kubeconfig of its own (upstream takes its API server only from
//     --kubeconfig; its namespace is kubevirt when no ServiceAccount file exists);
//   - VIRT_OPERATOR_IMAGE=quay.io/kubevirt/virt-operator:<version>, its own image,
//     which its install-strategy Job runs: the sandbox's Job runner must map that
//     image to upstream's binary (WithUpstreamOperator), and the Job's pods run as
//     kubevirt-operator too;
//   - the KubeVirt CRD (the sandbox installs config/crd/bases, a superset of
//     upstream's) and the kubevirt-cluster-critical PriorityClass
//     (config/manager/priorityclass.yaml), which upstream's manifest ships beside
//     the operator;
//   - a node labelled node-role.kubernetes.io/control-plane, where its virt-api
//     and virt-controller go (the sandbox labels node-000).
//
// Ports: upstream's operator binds its webhook server to :8444 and its health and
// metrics to :8186, on every address whatever --listen says, so two operators on
// one machine collide (this project's operator serves its webhooks on 8444 too, and
// tests run packages side by side). It therefore runs in a network namespace of
// its own, created when the process is (clone(2) with CLONE_NEWNET: `unshare -n`
// without the extra binary), where only loopback is up and nothing but its own
// ports exist. Its one way out is the API server: this test process listens, inside
// that namespace, on the API server's own loopback address and port (so the
// kubeconfig and the server certificate are the sandbox's) and forwards each
// connection to the real API server; TLS runs end to end through it. Creating a
// network namespace needs CAP_SYS_ADMIN: without it the operator runs in the host's
// network, once 8444 and 8186 are free on every address (it waits up to 3 minutes,
// then fails the test saying why), and one upstream operator at a time per test
// process; the harness cannot keep other processes off them.
//
// Switching operators: upstream's operator and this project's use the same Lease
// (kubevirt/virt-operator), so they never act at once, and v1.9's uses the same
// finalizer on the KubeVirt CR (kubevirt.io/foregroundDeleteKubeVirt), so either
// can finish an uninstall the other began (v1.8's writes the legacy
// foregroundDeleteKubeVirt, which this project's operator strips). Upstream does
// not release its lease when stopped: a successor waits for it to expire, about
// 17 s after Stop.
type UpstreamOperator struct {
	// Version is the KubeVirt release it is the operator of.
	Version string
	// LogPath is its stdout and stderr (in the test's temporary directory).
	LogPath string
	// Isolated is true when it runs in a network namespace of its own.
	Isolated bool

	cmd      *exec.Cmd
	exited   chan struct{} // closed once the process is reaped
	waitErr  error
	fwd      *forwarder
	release  func() // frees the host ports when not isolated
	stopOnce sync.Once
	stopErr  error
	logFile  *os.File
}

// hostPorts serializes upstream operators that run in the host's network.
var hostPorts sync.Mutex

// StartUpstreamOperator runs KubeVirt's own virt-operator of version against sb,
// which must have been started with WithUpstreamOperator(t, version) for its
// install-strategy Job to run. It first creates what upstream's manifest gives the
// cluster besides the operator's Deployment, where missing (PrepareUpstreamOperator:
// the kubevirt namespace, the kubevirt-cluster-critical PriorityClass, the
// ServiceAccount kubevirt-operator bound to cluster-admin, and the control-plane
// node label). It
// returns once the process has started; the operator is stopped when the test
// ends (or by Stop), and its log's tail is shown when the test failed.
func StartUpstreamOperator(t testing.TB, sb *sandbox.Sandbox, version string) *UpstreamOperator {
	t.Helper()
	bin := UpstreamBinary(t, version, "virt-operator")
	c := adminClient(t, sb)
	PrepareUpstreamOperator(t, sb)

	dir := t.TempDir()
	token := ServiceAccountConfig(t, c, sb.RESTConfig(), UpstreamOperatorNamespace, UpstreamOperatorAccount).BearerToken
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := sb.WriteKubeconfig(kubeconfig, token); err != nil {
		t.Fatal(err)
	}
	u := &UpstreamOperator{Version: version, LogPath: filepath.Join(dir, "virt-operator-"+version+".log"), exited: make(chan struct{})}
	logFile, err := os.Create(u.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	u.logFile = logFile

	// The shell waits for a line on fd 3 before it becomes the operator: by then
	// loopback is up in its network namespace and the API server is reachable
	// there. If this process dies first, the read fails and the shell exits.
	gateR, gateW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer gateW.Close()
	newCmd := func(cloneflags uintptr) *exec.Cmd {
		cmd := exec.Command("/bin/sh", "-c", `read -r _ <&3 && exec 3<&- && exec "$@"`, "sh", bin, "--kubeconfig", kubeconfig)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "VIRT_OPERATOR_IMAGE=" + UpstreamOperatorImage(version)}
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.ExtraFiles = []*os.File{gateR}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Cloneflags: cloneflags}
		return cmd
	}
	start := func(cmd *exec.Cmd) error {
		// The process is started and reaped on one locked OS thread, which lives as
		// long as the process: Pdeathsig kills the operator when that thread ends,
		// i.e. when this test process dies without stopping it.
		started := make(chan error, 1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if err := cmd.Start(); err != nil {
				started <- err
				return
			}
			started <- nil
			u.waitErr = cmd.Wait()
			close(u.exited)
		}()
		return <-started
	}
	cmd := newCmd(syscall.CLONE_NEWNET)
	if err := start(cmd); err == nil {
		u.Isolated = true
	} else if errors.Is(err, syscall.EPERM) {
		// No CAP_SYS_ADMIN: the host's network, with its two ports checked free.
		u.release = claimHostPorts(t)
		cmd = newCmd(0)
		if err := start(cmd); err != nil {
			u.release()
			t.Fatalf("starting KubeVirt's virt-operator %s: %v", version, err)
		}
	} else {
		t.Fatalf("starting KubeVirt's virt-operator %s in a network namespace of its own: %v", version, err)
	}
	u.cmd = cmd
	_ = gateR.Close()
	t.Cleanup(func() {
		if err := u.Stop(); err != nil {
			t.Errorf("stopping KubeVirt's virt-operator %s: %v", version, err)
		}
		if t.Failed() {
			logTail(t, u.LogPath, 40)
		}
	})
	if u.Isolated {
		server, err := url.Parse(sb.RESTConfig().Host)
		if err != nil {
			t.Fatal(err)
		}
		l, err := listenInNetns(cmd.Process.Pid, server.Host)
		if err != nil {
			t.Fatalf("the API server inside KubeVirt's virt-operator's network namespace: %v", err)
		}
		u.fwd = forward(l, server.Host)
	}
	if _, err := gateW.Write([]byte("go\n")); err != nil {
		t.Fatalf("starting KubeVirt's virt-operator %s: %v", version, err)
	}
	network := "its own network namespace"
	if !u.Isolated {
		network = "the host's network (no CAP_SYS_ADMIN for a namespace of its own)"
	}
	t.Logf("KubeVirt's virt-operator %s runs as %s/%s in %s, pid %d, log %s",
		version, UpstreamOperatorNamespace, UpstreamOperatorAccount, network, cmd.Process.Pid, u.LogPath)
	return u
}

// Stop ends the operator (SIGTERM, then SIGKILL after 10 s) and its API server
// forwarder; it returns nil if the process was still running when asked to stop.
// It does not release its Lease kubevirt/virt-operator: the next operator takes
// over once that expires, about 17 s later. Stop may be called more than once.
func (u *UpstreamOperator) Stop() error {
	u.stopOnce.Do(func() {
		select {
		case <-u.exited:
			u.stopErr = fmt.Errorf("it had exited by itself: %v", u.waitErr)
		default:
			_ = syscall.Kill(-u.cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-u.exited:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-u.cmd.Process.Pid, syscall.SIGKILL)
				<-u.exited
			}
		}
		if u.fwd != nil {
			u.fwd.close()
		}
		if u.release != nil {
			u.release()
		}
		_ = u.logFile.Close()
	})
	return u.stopErr
}

// Exited reports whether the process has ended, and how.
func (u *UpstreamOperator) Exited() (bool, error) {
	select {
	case <-u.exited:
		return true, u.waitErr
	default:
		return false, nil
	}
}

// PrepareUpstreamOperator creates, where missing, what upstream's operator
// manifest gives the cluster besides the operator's Deployment (and the
// control-plane node label); StartUpstreamOperator calls it, and a test that must
// tell these objects from what the operator creates calls it first.
//
// RBAC: upstream's manifest grants kubevirt-operator a ClusterRole that is the
// union of every rule its components' roles hold (Kubernetes lets an account
// create a role, or bind one, only with every permission in it, or the escalate
// and bind verbs) plus its own: hundreds of rules that change with each release.
// Deriving them here would copy a release's manifest, and a missing rule would
// only make upstream fail in ways that are not what the tests look at (what it
// installs). So it is bound to cluster-admin, which is a superset of that role:
// the tests do not measure upstream's least privilege. Its install-strategy Job
// runs as the same account (its dump needs get on namespaces and serviceaccounts
// and create on configmaps in kubevirt, which cluster-admin holds).
func PrepareUpstreamOperator(t testing.TB, sb *sandbox.Sandbox) {
	t.Helper()
	ctx := context.Background()
	c := adminClient(t, sb)
	pc, err := manager.PriorityClass()
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: UpstreamOperatorNamespace}},
		pc,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: UpstreamOperatorAccount, Namespace: UpstreamOperatorNamespace,
			Labels: map[string]string{"kubevirt.io": ""}}},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: UpstreamOperatorAccount + "-cluster-admin", Labels: map[string]string{"kubevirt.io": ""}},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: UpstreamOperatorAccount, Namespace: UpstreamOperatorNamespace}},
		},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %T %s for KubeVirt's virt-operator: %v", o, o.GetName(), err)
		}
	}
	labelSandboxCRDs(t, c)
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) == 0 {
		t.Fatal("the sandbox has no nodes for KubeVirt's components")
	}
	for _, n := range nodes.Items {
		if _, ok := n.Labels[controlPlaneLabel]; ok {
			return
		}
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:""}}}`, controlPlaneLabel)
	if err := c.Patch(ctx, &nodes.Items[0], client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
}

func adminClient(t testing.TB, sb *sandbox.Sandbox) client.Client {
	t.Helper()
	scheme := kruntime.NewScheme()
	for _, add := range []func(*kruntime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(sb.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// claimHostPorts waits (up to hostPortsWait) until upstream's two fixed ports are
// free on every address, and keeps other upstream operators of this process off
// them until the returned release. Another process may still take them after the
// check: this is the fallback without a network namespace, not a guarantee.
func claimHostPorts(t testing.TB) func() {
	t.Helper()
	hostPorts.Lock()
	deadline := time.Now().Add(hostPortsWait)
	for _, port := range []int{upstreamWebhookPort, upstreamHealthPort} {
		for {
			l, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
			if err == nil {
				_ = l.Close()
				break
			}
			if time.Now().After(deadline) {
				hostPorts.Unlock()
				t.Fatalf("KubeVirt's virt-operator binds port %d on every address, and without a network namespace of its own (no CAP_SYS_ADMIN) it shares the host's, where the port has been taken for %s: %v", port, hostPortsWait, err)
			}
			time.Sleep(time.Second)
		}
	}
	return hostPorts.Unlock
}

// listenInNetns listens on addr inside the network namespace of process pid,
// after bringing its loopback interface up. The listening socket belongs to that
// namespace; the connections it accepts are served from any thread.
func listenInNetns(pid int, addr string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// Never unlocked: the thread, whose network namespace is changed, ends
		// with this goroutine instead of going back to the scheduler.
		runtime.LockOSThread()
		l, err := func() (net.Listener, error) {
			ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
			if err != nil {
				return nil, err
			}
			defer ns.Close()
			if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
				return nil, fmt.Errorf("setns: %w", err)
			}
			if err := loopbackUp(); err != nil {
				return nil, fmt.Errorf("bringing loopback up: %w", err)
			}
			return net.Listen("tcp", addr)
		}()
		ch <- result{l, err}
	}()
	r := <-ch
	return r.l, r.err
}

// loopbackUp sets IFF_UP on lo in the calling thread's network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// forwarder copies each connection accepted by l to a new connection to target.
type forwarder struct {
	l     net.Listener
	mu    sync.Mutex
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func forward(l net.Listener, target string) *forwarder {
	f := &forwarder{l: l, conns: map[net.Conn]bool{}}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				f.pipe(in, target)
			}()
		}
	}()
	return f
}

func (f *forwarder) pipe(in net.Conn, target string) {
	out, err := net.DialTimeout("tcp", target, 10*time.Second)
	if err != nil {
		_ = in.Close()
		return
	}
	if !f.track(in, out) {
		return
	}
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(out, in)
	go cp(in, out)
	<-done
	<-done
	f.untrack(in, out)
}

// track records a connection pair; false (both closed) once the forwarder is closed.
func (f *forwarder) track(conns ...net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns == nil {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		f.conns[c] = true
	}
	return true
}

func (f *forwarder) untrack(conns ...net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(f.conns, c)
	}
}

func (f *forwarder) close() {
	_ = f.l.Close()
	f.mu.Lock()
	for c := range f.conns {
		_ = c.Close()
	}
	f.conns = nil
	f.mu.Unlock()
	f.wg.Wait()
}

// logTail logs the last n lines of the file at path.
func logTail(t testing.TB, path string, n int) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	t.Logf("--- last lines of %s:\n%s", path, strings.Join(lines, "\n"))
}

// labelSandboxCRDs marks the VM CRDs the sandbox created for its VM simulator
// as the operator's: upstream's operator sees CRDs only through an informer
// filtered by app.kubernetes.io/managed-by, so it would try to create one it
// cannot see and stop at "already exists". The KubeVirt CRD stays unlabelled:
// neither operator's strategy has it.
func labelSandboxCRDs(t testing.TB, c client.Client) {
	t.Helper()
	ctx := context.Background()
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(ctx, crds); err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"labels":{"app.kubernetes.io/managed-by":"virt-operator"}}}`)
	for i := range crds.Items {
		crd := &crds.Items[i]
		if crd.Name == "kubevirts.kubevirt.io" || !strings.HasSuffix(crd.Spec.Group, "kubevirt.io") || crd.Labels["app.kubernetes.io/managed-by"] != "" {
			continue
		}
		if err := c.Patch(ctx, crd, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
	}
}
