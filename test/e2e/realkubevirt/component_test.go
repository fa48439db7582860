package realkubevirt_test

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/sandbox/hostexec"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
)

// component is one of KubeVirt's own binaries standing in for the pods of the
// Deployment of the same name, as a host process.
type component struct {
	name   string // the Deployment (and binary) name
	binary string
	addr   string // its own loopback address, so pod ports do not collide
}

// running is a started component.
type running struct {
	component
	cmd *exec.Cmd
	log string
	// notReproduced are the pod's mounts outside /etc, which the host process
	// does not get (listed, not dropped silently).
	notReproduced []string
}

// start runs c the way its pod would run: the Deployment's container command and
// args as the operator wrote them, its environment (fieldRefs resolved to this host
// process), its ServiceAccount's identity through a token, and the Secrets and
// ConfigMaps its pod mounts at their real paths under /etc, in a private mount
// namespace over an overlay of /etc (the host's /etc is untouched).
func (e *env) start(t *testing.T, c component) *running {
	t.Helper()
	ctx := t.Context()
	dep := &appsv1.Deployment{}
	if err := e.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: c.name}, dep); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: c.name + "-host", Namespace: namespace, Labels: dep.Spec.Template.Labels},
		Spec:       *dep.Spec.Template.Spec.DeepCopy(),
		Status:     corev1.PodStatus{PodIP: c.addr, HostIP: c.addr},
	}
	pod.Spec.NodeName = "node-000"
	container := &pod.Spec.Containers[0]
	dir := t.TempDir()
	kubeconfig := e.writeKubeconfig(t, dir, pod.Spec.ServiceAccountName)

	envList, vars, err := hostexec.ContainerEnv(pod, container, func(kind, name string) (map[string]string, error) {
		return nil, fmt.Errorf("%s %s: not supported here", kind, name)
	})
	if err != nil {
		t.Fatal(err)
	}
	argv := hostexec.Argv(container, c.binary, vars)
	argv = append(argv, "--kubeconfig", kubeconfig, "--listen", c.addr)

	r := &running{component: c, log: filepath.Join(dir, c.name+".log")}
	binds := e.materializeMounts(t, pod, container, filepath.Join(dir, "volumes"), r)
	script := []string{"set -e", fmt.Sprintf("mkdir -p %s/upper %s/work", dir, dir),
		fmt.Sprintf("mount -t overlay overlay -o lowerdir=/etc,upperdir=%s/upper,workdir=%s/work /etc", dir, dir)}
	for _, b := range binds {
		script = append(script, fmt.Sprintf("mkdir -p %s && mount --bind %s %s", b[1], b[0], b[1]))
	}
	script = append(script, `exec "$@"`)
	args := append([]string{"-m", "--propagation", "private", "--", "/bin/sh", "-c", strings.Join(script, "\n"), "sh"}, argv...)
	logFile, err := os.Create(r.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, envList...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", c.name, err)
	}
	r.cmd = cmd
	t.Logf("%s runs as %s on %s: %s", c.name, pod.Spec.ServiceAccountName, c.addr, strings.Join(argv[1:], " "))
	if len(r.notReproduced) > 0 {
		t.Logf("%s: mounts not reproduced on the host: %s", c.name, strings.Join(r.notReproduced, ", "))
	}
	t.Cleanup(func() {
		r.stop()
		_ = logFile.Close()
		if t.Failed() {
			tail(t, r.log)
		}
	})
	return r
}

func (r *running) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	r.cmd = nil
}

// writeKubeconfig is a kubeconfig for the sandbox acting as ServiceAccount sa.
func (e *env) writeKubeconfig(t *testing.T, dir, sa string) string {
	t.Helper()
	cfg := sandboxtest.ServiceAccountConfig(t, e.c, e.sb.RESTConfig(), namespace, sa)
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["sandbox"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca}
	kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["sandbox"] = &clientcmdapi.Context{Cluster: "sandbox", AuthInfo: sa}
	kc.CurrentContext = "sandbox"
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// materializeMounts writes each Secret, ConfigMap and emptyDir the container
// mounts under /etc into a directory and returns the (directory, mount path)
// pairs; other mounts are recorded in r.notReproduced.
func (e *env) materializeMounts(t *testing.T, pod *corev1.Pod, c *corev1.Container, root string, r *running) [][2]string {
	t.Helper()
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v
	}
	var binds [][2]string
	for _, m := range c.VolumeMounts {
		v := volumes[m.Name]
		if !strings.HasPrefix(m.MountPath, "/etc/") {
			r.notReproduced = append(r.notReproduced, fmt.Sprintf("%s (%s)", m.MountPath, m.Name))
			continue
		}
		dir := filepath.Join(root, m.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var data map[string][]byte
		switch {
		case v.Secret != nil:
			s := &corev1.Secret{}
			if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: v.Secret.SecretName}, s); err != nil {
				t.Fatalf("%s mounts Secret %s: %v", c.Name, v.Secret.SecretName, err)
			}
			data = s.Data
		case v.ConfigMap != nil:
			cm := &corev1.ConfigMap{}
			if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: v.ConfigMap.Name}, cm); err != nil {
				t.Fatalf("%s mounts ConfigMap %s: %v", c.Name, v.ConfigMap.Name, err)
			}
			data = map[string][]byte{}
			for k, s := range cm.Data {
				data[k] = []byte(s)
			}
		case v.EmptyDir != nil:
		default:
			r.notReproduced = append(r.notReproduced, fmt.Sprintf("%s (%s)", m.MountPath, m.Name))
			continue
		}
		for k, b := range data {
			if err := os.WriteFile(filepath.Join(dir, k), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		binds = append(binds, [2]string{dir, m.MountPath})
	}
	sort.Slice(binds, func(i, j int) bool { return binds[i][1] < binds[j][1] })
	return binds
}

// ready polls the component's readiness probe path (HTTPS on its address).
func (r *running) ready(t *testing.T, path string, timeout time.Duration) {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // readiness only
	url := fmt.Sprintf("https://%s:8443%s", r.addr, path)
	var last string
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		resp, err := hc.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Logf("%s ready: %s", r.name, url)
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if r.cmd != nil && r.cmd.ProcessState != nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	tail(t, r.log)
	t.Fatalf("%s not ready at %s within %s: %s", r.name, url, timeout, last)
}

func tail(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	t.Logf("--- last lines of %s:\n%s", filepath.Base(path), strings.Join(lines, "\n"))
}

// certificateErrors are the log lines where a component failed to load a file.
func certificateErrors(path string) []string {
	data, _ := os.ReadFile(path)
	var out []string
	for _, l := range bytes.Split(data, []byte("\n")) {
		if bytes.Contains(l, []byte("failed to load")) {
			out = append(out, string(l))
		}
	}
	return out
}
