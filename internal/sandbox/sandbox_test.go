package sandbox

import (
	"bytes"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
)

func readPEM(t *testing.T, path string) *pem.Block {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	return block
}

func TestGenerateCerts(t *testing.T) {
	f, err := generateCerts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(readPEM(t, f.CACert).Bytes)
	if err != nil {
		t.Fatal(err)
	}
	serving, err := x509.ParseCertificate(readPEM(t, f.ServingCert).Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := serving.Verify(x509.VerifyOptions{DNSName: host, Roots: pool}); err != nil {
			t.Errorf("serving cert for %s: %v", host, err)
		}
	}
	if _, err := x509.ParsePKCS8PrivateKey(readPEM(t, f.ServingKey).Bytes); err != nil {
		t.Errorf("serving key: %v", err)
	}
	key, err := x509.ParsePKCS8PrivateKey(readPEM(t, f.SAKey).Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.ParsePKIXPublicKey(readPEM(t, f.SAPub).Bytes)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, ok := key.(*rsa.PrivateKey)
	if !ok || !rsaKey.PublicKey.Equal(pub) {
		t.Errorf("service-account key pair: RSA %v, public key matches %v", ok, ok && rsaKey.PublicKey.Equal(pub))
	}
	if !bytes.Equal(f.CAPEM, pem.EncodeToMemory(readPEM(t, f.CACert))) {
		t.Error("CAPEM differs from ca.crt")
	}
}

func TestKubeconfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(path, "https://127.0.0.1:1234", []byte("CA"), "tok"); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:1234" || cfg.BearerToken != "tok" || string(cfg.CAData) != "CA" {
		t.Errorf("kubeconfig gives host %q token %q CA %q", cfg.Host, cfg.BearerToken, cfg.CAData)
	}
	if err := writeTokenFile(filepath.Join(dir, "tokens.csv"), "tok"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "tokens.csv"))
	if got := string(data); got != "tok,sandbox-admin,sandbox-admin,\"system:masters\"\n" {
		t.Errorf("token file %q", got)
	}
}

func hasArg(args []string, want string) bool { return slices.Contains(args, want) }

func TestFlags(t *testing.T) {
	l := newLayout("/sb", []int{2379, 2380, 6443}, "")
	api := apiserverArgs(l)
	for _, want := range []string{
		"--etcd-servers=http://127.0.0.1:2379",
		"--secure-port=6443",
		"--bind-address=127.0.0.1",
		"--tls-cert-file=/sb/certs/apiserver.crt",
		"--token-auth-file=/sb/certs/tokens.csv",
		"--authorization-mode=RBAC",
		"--service-account-key-file=/sb/certs/sa.pub",
		"--service-account-signing-key-file=/sb/certs/sa.key",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		"--disable-admission-plugins=TaintNodesByCondition,ValidatingAdmissionWebhook,MutatingAdmissionWebhook",
	} {
		if !hasArg(api, want) {
			t.Errorf("kube-apiserver args lack %s", want)
		}
	}
	if strings.Contains(strings.Join(api, " "), "--audit") {
		t.Error("audit flags without an audit log")
	}
	if strings.Contains(strings.Join(api, " "), "APIResponseCompression") {
		t.Error("responses uncompressed though not asked: a benchmark's API server would not be a real one's")
	}
	l.Uncompressed = true
	if !hasArg(apiserverArgs(l), "--feature-gates=APIResponseCompression=false") {
		t.Error("an uncompressed sandbox's API server still gzips its responses")
	}
	l.Uncompressed = false
	audited := apiserverArgs(newLayout("/sb", []int{1, 2, 3}, "/logs/audit.log"))
	for _, want := range []string{"--audit-log-path=/logs/audit.log", "--audit-policy-file=/sb/audit-policy.yaml"} {
		if !hasArg(audited, want) {
			t.Errorf("audited kube-apiserver args lack %s", want)
		}
	}
	kcm := controllerManagerArgs(l)
	for _, want := range []string{"--kubeconfig=/sb/kubeconfig", "--controllers=*,-nodeipam,-nodelifecycle", "--root-ca-file=/sb/certs/ca.crt", "--leader-elect=false", "--secure-port=0"} {
		if !hasArg(kcm, want) {
			t.Errorf("kube-controller-manager args lack %s", want)
		}
	}
	if !hasArg(schedulerArgs(l), "--leader-elect=false") {
		t.Error("kube-scheduler elects a leader")
	}
	kwok := kwokArgs(l)
	for _, want := range []string{"--kubeconfig=/sb/kubeconfig", "--manage-nodes-with-label-selector=type=kwok", "--config=/sb/kwok-stages.yaml"} {
		if !hasArg(kwok, want) {
			t.Errorf("kwok args lack %s", want)
		}
	}
	if !hasArg(etcdArgs(l), "--listen-client-urls=http://127.0.0.1:2379") {
		t.Error("etcd does not listen on its client port")
	}
}

func TestStateRoundTrip(t *testing.T) {
	w := &stateWriter{path: filepath.Join(t.TempDir(), stateFile)}
	for i, name := range []string{"etcd", "kube-apiserver"} {
		if err := w.update(func(st *state) {
			st.Server = "https://127.0.0.1:1"
			st.Processes = append(st.Processes, procState{Name: name, Pid: 100 + i, Binary: "/bin/" + name})
		}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := readState(w.path)
	if err != nil {
		t.Fatal(err)
	}
	want := []procState{{"etcd", 100, "/bin/etcd"}, {"kube-apiserver", 101, "/bin/kube-apiserver"}}
	if st.Server != "https://127.0.0.1:1" || !slices.Equal(st.Processes, want) {
		t.Errorf("read back %+v", st)
	}
}

func TestStagesYAML(t *testing.T) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(stagesYAML), 4096)
	var names []string
	for {
		var doc struct {
			Kind     string
			Metadata struct{ Name string }
			Spec     struct {
				Selector struct {
					MatchExpressions []struct{ Key string }
				}
				Next struct{ StatusTemplate string }
			}
		}
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if doc.Kind != "Stage" {
			t.Errorf("document %q has kind %q", doc.Metadata.Name, doc.Kind)
		}
		names = append(names, doc.Metadata.Name)
		keys := doc.Spec.Selector.MatchExpressions
		switch doc.Metadata.Name {
		case "pod-ready", "pod-complete", "pod-crashloop", "pod-nopull":
			// Host-executed pods are left to the hostexec runner.
			if len(keys) == 0 || keys[len(keys)-1].Key != defaultStageExpression {
				t.Errorf("stage %s does not skip host-executed pods (last key must be %s)", doc.Metadata.Name, defaultStageExpression)
			}
		}
		if doc.Metadata.Name == "pod-crashloop" {
			if len(keys) != 4 || !strings.Contains(keys[2].Key, `endswith("-crashloop")`) {
				t.Errorf("crash-loop selector %+v", keys)
			}
			if !strings.Contains(doc.Spec.Next.StatusTemplate, "CrashLoopBackOff") {
				t.Error("crash-loop stage sets no CrashLoopBackOff")
			}
		}
	}
	want := []string{"node-initialize", "node-heartbeat-with-lease", "pod-ready", "pod-complete", "pod-delete", "pod-crashloop", "pod-nopull"}
	if !slices.Equal(names, want) {
		t.Errorf("stages %v, want %v", names, want)
	}
}

func TestFreePorts(t *testing.T) {
	ports, err := freePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ports)
	if len(slices.Compact(ports)) != 5 {
		t.Errorf("ports not distinct: %v", ports)
	}
}

func TestNewNode(t *testing.T) {
	n := newNode(1234)
	if n.Name != "node-1234" || n.Labels["type"] != "kwok" || n.Labels["kubernetes.io/hostname"] != "node-1234" {
		t.Errorf("node %s labels %v", n.Name, n.Labels)
	}
	if nodeName(7) != "node-007" || n.Spec.PodCIDR != "10.132.210.0/24" {
		t.Errorf("node-007 named %s; node-1234 podCIDR %s", nodeName(7), n.Spec.PodCIDR)
	}
	if got := n.Status.Allocatable.Memory().String(); got != "256Gi" {
		t.Errorf("allocatable memory %s", got)
	}
}

func TestDown(t *testing.T) {
	if err := Down(filepath.Join(t.TempDir(), "missing")); err != nil {
		t.Errorf("missing dir: %v", err)
	}
	foreign := t.TempDir()
	_ = os.WriteFile(filepath.Join(foreign, "precious"), nil, 0o644)
	if err := Down(foreign); err == nil {
		t.Error("Down removed a directory without state.json")
	}

	dir := t.TempDir()
	w := &stateWriter{path: filepath.Join(dir, stateFile)}
	sleep, err := startProcess("sleeper", "/bin/sleep", []string{"1000"}, nil, filepath.Join(dir, "sleep.log"))
	if err != nil {
		t.Fatal(err)
	}
	_ = w.update(func(st *state) {
		// A dead pid and a live one: Down must tolerate the first and stop the second.
		st.Processes = []procState{{Name: "gone", Pid: 1 << 22, Binary: "/bin/true"}, {Name: "sleeper", Pid: sleep.pid, Binary: "/bin/sleep"}}
	})
	if err := Down(dir); err != nil {
		t.Fatal(err)
	}
	if pidAlive(sleep.pid, "/bin/sleep") {
		t.Error("sleep still running after Down")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dir not removed: %v", err)
	}
}

func TestStopKillsAfterGrace(t *testing.T) {
	// A process ignoring SIGTERM must be killed, and not before the grace period:
	// the lower bound is the behaviour (SIGKILL waits for the grace), so it holds
	// on any machine; there is no upper bound.
	dir := t.TempDir()
	trapped := filepath.Join(dir, "trapped")
	p, err := startProcess("stubborn", "/bin/sh", []string{"-c", `trap "" TERM; : > ` + trapped + `; sleep 1000`}, nil, filepath.Join(dir, "sh.log"))
	if err != nil {
		t.Fatal(err)
	}
	// The trap is in place once the shell has written the file (not after a
	// fixed sleep, which a busy machine can outlast).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(trapped); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shell did not install its trap")
		}
	}
	const grace = 300 * time.Millisecond
	start := time.Now()
	stopPid(p.pid, "/bin/sh", grace)
	if took := time.Since(start); pidAlive(p.pid, "/bin/sh") || took < grace {
		t.Errorf("alive %v after %s, want killed and not before the grace period %s", pidAlive(p.pid, "/bin/sh"), took, grace)
	}
}

func TestRenderStagesAndHostExecArgs(t *testing.T) {
	custom := `(.metadata.labels["x"] == "y")`
	out := string(renderStages(custom))
	if strings.Contains(out, defaultStageExpression) || strings.Count(out, custom) != 4 { // pod-ready, pod-complete, pod-crashloop, pod-nopull
		t.Errorf("rendered stages hold the custom expression %d times", strings.Count(out, custom))
	}
	if string(renderStages(defaultStageExpression)) != string(stagesYAML) {
		t.Error("rendering the default expression changed the stages")
	}

	l := newLayout("/sb", []int{1, 2, 3}, "")
	hx := hostExec{binary: "/sb/bin/virt-sandbox", program: "/sb/bin/virt-operator", readyFile: "/sb/hostexec.ready"}
	args := strings.Join(hostExecArgs(l, hx), " ")
	want := "hostexec --kubeconfig=/sb/kubeconfig --binary=/sb/bin/virt-operator --log-dir=/sb/logs --work-dir=/sb/hostexec --ready-file=/sb/hostexec.ready"
	if args != want {
		t.Errorf("args\n%s\nwant\n%s", args, want)
	}
	hx.selectors = []string{}
	if got := hostExecArgs(l, hx); got[len(got)-1] != "--selector=" {
		t.Errorf("no selectors: %v", got)
	}
	hx.selectors = []string{"a=b", "c"}
	if got := hostExecArgs(l, hx); !slices.Equal(got[len(got)-2:], []string{"--selector=a=b", "--selector=c"}) {
		t.Errorf("selectors: %v", got)
	}
	hx.gogc = "400"
	if got := hostExecArgs(l, hx); got[len(got)-1] != "--gogc=400" {
		t.Errorf("a GOGC for the programs: %v", got)
	}
}

func TestResolveBinaries(t *testing.T) {
	// A test binary is not a virt-sandbox binary: neither by default.
	if sb, op, err := resolveBinaries("", ""); sb != "" || op != "" || err != nil {
		t.Errorf("default: %q %q, %v", sb, op, err)
	}
	if _, _, err := resolveBinaries(filepath.Join(t.TempDir(), "missing"), ""); err == nil {
		t.Error("a missing sandbox binary was accepted")
	}
	dir := t.TempDir()
	if _, _, err := resolveBinaries("", dir); err == nil {
		t.Error("a directory was accepted as the operator binary")
	}
	exe := func(name string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	sandboxSrc := exe("virt-sandbox")
	// Explicit sandbox binary, no operator beside it yet: no operator binary.
	if sb, op, err := resolveBinaries(sandboxSrc, ""); sb != sandboxSrc || op != "" || err != nil {
		t.Errorf("lone virt-sandbox: %q %q, %v", sb, op, err)
	}
	operatorSrc := exe("virt-operator")
	if sb, op, err := resolveBinaries(sandboxSrc, ""); sb != sandboxSrc || op != operatorSrc || err != nil {
		t.Errorf("the operator beside virt-sandbox: %q %q, %v", sb, op, err)
	}
	other := exe("my-operator")
	if sb, op, err := resolveBinaries(sandboxSrc, other); sb != sandboxSrc || op != other || err != nil {
		t.Errorf("explicit operator: %q %q, %v", sb, op, err)
	}

	b, err := installBinaries(filepath.Join(dir, "sb"), Options{SandboxBinary: sandboxSrc, OperatorBinary: other})
	if err != nil {
		t.Fatal(err)
	}
	if b.sandbox != filepath.Join(dir, "sb", "bin", "virt-sandbox") || b.operator != filepath.Join(dir, "sb", "bin", "virt-operator") {
		t.Errorf("installed %+v", b)
	}
	for _, path := range []string{b.sandbox, b.operator} {
		if st, err := os.Stat(path); err != nil || st.Mode()&0o111 == 0 {
			t.Errorf("installed binary %s: %v %v", path, st, err)
		}
	}
	// The runner needs both; the simulator only the sandbox binary.
	if hx, _ := newHostExec(dir, Options{}, hostBinaries{sandbox: b.sandbox}); hx.binary != "" {
		t.Errorf("runner without an operator binary: %q", hx.binary)
	}
	if hx, _ := newHostExec(dir, Options{}, b); hx.binary != b.sandbox || hx.program != b.operator {
		t.Errorf("runner %q running pods with %q", hx.binary, hx.program)
	}
}

func TestAuditPolicy(t *testing.T) {
	if got := auditPolicy(nil); !strings.HasSuffix(got, "rules:\n- level: Metadata\n") {
		t.Errorf("every request: %q", got)
	}
	got := auditPolicy([]string{"system:serviceaccount:kubevirt:virt-operator"})
	if !strings.Contains(got, "users: [\"system:serviceaccount:kubevirt:virt-operator\"]\n- level: None\n") {
		t.Errorf("one user's requests only: %q", got)
	}
}

func TestComponentEnvSetsGOGCUnlessSet(t *testing.T) {
	unset := func(string) (string, bool) { return "", false }
	got := componentEnv([]string{"KWOK_WORKDIR=/sb/kwok"}, unset)
	if want := []string{"GOGC=" + componentGCPercent, "KWOK_WORKDIR=/sb/kwok"}; !slices.Equal(got, want) {
		t.Errorf("GOGC unset: %q, want %q", got, want)
	}
	if got := componentEnv(nil, unset); !slices.Equal(got, []string{"GOGC=" + componentGCPercent}) {
		t.Errorf("no extra env: %q", got)
	}
	set := func(k string) (string, bool) { return "100", k == "GOGC" }
	if got := componentEnv([]string{"A=b"}, set); !slices.Equal(got, []string{"A=b"}) {
		t.Errorf("GOGC set by the caller: %q, want it inherited, not overridden", got)
	}
}
