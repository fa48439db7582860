package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Options configure Up.
type Options struct {
	Dir      string // working dir; holds kubeconfig, logs, state.json, etcd data, certs
	Nodes    int    // kwok nodes to create (cpu 32, memory 256Gi, pods 110; named node-000, ...)
	BinDir   string // cluster binaries; default DefaultBinDir()
	CRDDir   string // optional: every *.yaml there is created (CRDs) and waited for Established
	AuditLog string // optional: kube-apiserver's audit log (Metadata level)
	// Webhooks makes the API server call admission webhooks, which the sandbox
	// otherwise never does (virt-api's backends do not run on kwok nodes, so its
	// webhooks, failurePolicy Fail, would refuse every VM write): for a test of
	// what admission refuses, on a cluster that does not need virt-api's.
	Webhooks bool
	// AuditUsers, when set, limits the audit log to these users' requests (at
	// 10,000 VMIs everyone else's would be most of the API server's work).
	AuditUsers []string
	// UncompressedResponses keeps the API server from gzipping large
	// responses, which every cluster does by default: the sandbox's clients
	// are all on loopback, where compression only costs CPU (a tenth of the
	// API server's in the e2e suite's canary test, most of it lists).
	UncompressedResponses bool
	// HostExecGOGC, when set, is the GOGC of the host-executed programs whose
	// container sets none (the strategy dumps, KubeVirt's own operators);
	// empty: their own default, as in a cluster.
	HostExecGOGC string
	Log          io.Writer // progress lines; nil = discard

	// SandboxBinary is the virt-sandbox binary that runs the sandbox's own
	// background processes: the runner of host-executed pods (`virt-sandbox
	// hostexec`, package hostexec) and the VM simulator (`virt-sandbox vmsim`).
	// Default: this executable when it is named virt-sandbox; otherwise (e.g. a
	// test binary) neither starts and host-executed pods stay Pending.
	SandboxBinary string
	// OperatorBinary is the virt-operator binary that runs host-executed pods of
	// the operator's image (the install-strategy Job's `virt-operator
	// --dump-install-strategy`). Default: a virt-operator beside SandboxBinary; the
	// runner starts only with both known.
	OperatorBinary string
	// HostExecSelectors select the host-executed pods besides the
	// sandbox.virt-operator.io/host-exec=true label; nil: hostexec.DefaultSelectors.
	HostExecSelectors []string
	// HostExecImages maps container images (or their repositories) to other host
	// programs than OperatorBinary: KubeVirt's own virt-operator of a release the
	// builtin generator does not know, say (see hostexec.Programs).
	HostExecImages map[string]string
	// MigrationDuration is how long the VM simulator (package vmsim) takes per live
	// migration; 0: vmsim.DefaultMigrationDuration. The simulator runs when
	// SandboxBinary is known, with the VM kinds' CRDs of the default release.
	MigrationDuration time.Duration
	// NoVMSim keeps the VM simulator from running: for KubeVirt's own
	// virt-controller, which must not meet it.
	NoVMSim bool

	// LeanVMs sizes the VM simulator for thousands of VMs, where the sandbox's
	// kube-apiserver is the bottleneck: VMIs run without launcher pods
	// (vmsim.Options.Podless), VMs skip their transitional statuses
	// (vmsim.Options.SkipTransitionalPhases) and virt-controller's updater plans
	// at most once a second (vmsim.Options.UpdaterWindow).
	LeanVMs bool
}

// Sandbox is a running control plane started by Up.
type Sandbox struct {
	Dir string

	rest   *rest.Config
	client kubernetes.Interface // rate limits raised for the sandbox's own calls
	procs  []*process
	state  *stateWriter
	log    io.Writer
	layout layout
}

// Timeouts of the start-up steps; generous because the machine is small and shared.
const (
	etcdTimeout      = 30 * time.Second
	apiserverTimeout = 90 * time.Second
	stepTimeout      = 60 * time.Second
)

// Up starts a sandbox in o.Dir and returns once every process is up, o.Nodes nodes
// are Ready, the CRDs of o.CRDDir are Established and DIR/kubeconfig is written. On
// failure everything already started is stopped and DIR removed (Down).
func Up(ctx context.Context, o Options) (*Sandbox, error) {
	start := time.Now()
	if o.Dir == "" {
		return nil, errors.New("sandbox: Options.Dir is required")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	binDir := o.BinDir
	if binDir == "" {
		if binDir, err = DefaultBinDir(); err != nil {
			return nil, err
		}
	}
	if err := CheckBinaries(binDir); err != nil {
		return nil, err
	}
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	var s *Sandbox
	err = onFreshPorts(portAttempts, logw, func() error {
		// DIR as prepareDir leaves it: a failed start removed it (Down).
		if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
			return err
		}
		s = &Sandbox{Dir: dir, log: logw, state: &stateWriter{path: filepath.Join(dir, stateFile)}}
		// An empty state.json first: it marks DIR as a sandbox that Down may remove.
		if err := s.state.update(func(*state) {}); err != nil {
			return err
		}
		err := s.up(ctx, o, binDir)
		if err == nil {
			return nil
		}
		if derr := Down(dir); derr != nil {
			// Not a start to make again over what could not be stopped.
			return fmt.Errorf("%s (cleaning up: %w)", err, derr)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	s.logf("sandbox up in %s", since(start))
	return s, nil
}

// portAttempts bounds the starts of one sandbox that lose a port (errPortTaken).
const portAttempts = 3

// onFreshPorts runs start, which picks its ports anew each time, again after a
// start that lost one of them to another process, up to attempts times in all.
// Any other failure ends it at once.
func onFreshPorts(attempts int, log io.Writer, start func() error) error {
	for attempt := 1; ; attempt++ {
		err := start()
		if err == nil || !errors.Is(err, errPortTaken) || attempt == attempts {
			return err
		}
		_, _ = fmt.Fprintf(log, "%s; starting again on other ports (attempt %d of %d)\n", firstLine(err.Error()), attempt+1, attempts)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// prepareDir refuses a directory holding a running sandbox or unrelated files, and
// clears one left behind by a sandbox whose processes are all gone.
func prepareDir(dir string) error {
	st, err := readState(filepath.Join(dir, stateFile))
	switch {
	case err == nil:
		if alive := running(st); len(alive) > 0 {
			return fmt.Errorf("a sandbox is already running in %s (%s pid %d): run virt-sandbox down --dir %s", dir, alive[0].Name, alive[0].Pid, dir)
		}
		if err := Down(dir); err != nil {
			return err
		}
	case errors.Is(err, os.ErrNotExist):
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			return fmt.Errorf("%s is not empty and holds no sandbox", dir)
		}
	default:
		return err
	}
	return os.MkdirAll(filepath.Join(dir, "logs"), 0o755)
}

func (s *Sandbox) up(ctx context.Context, o Options, binDir string) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	auditLog := ""
	if o.AuditLog != "" {
		if auditLog, err = filepath.Abs(o.AuditLog); err != nil {
			return err
		}
	}
	l := newLayout(s.Dir, ports, auditLog)
	l.AuditUsers, l.Webhooks, l.Uncompressed = o.AuditUsers, o.Webhooks, o.UncompressedResponses
	s.layout = l
	bins, err := installBinaries(s.Dir, o)
	if err != nil {
		return err
	}
	hx, err := newHostExec(s.Dir, o, bins)
	if err != nil {
		return err
	}
	if err := s.writeFiles(hx.stages); err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(fastConfig(s.rest))
	if err != nil {
		return err
	}
	s.client = client
	bin := func(name string) string { return filepath.Join(binDir, name) }

	if err := s.start("etcd", bin("etcd"), etcdArgs(l), nil); err != nil {
		return err
	}
	if err := s.waitFor(ctx, "etcd", etcdTimeout, s.etcdHealthy); err != nil {
		return err
	}
	s.logf("etcd ready in %s", since(s.procs[0].started))
	if err := s.start("kube-apiserver", bin("kube-apiserver"), apiserverArgs(l), nil); err != nil {
		return err
	}
	if err := s.waitFor(ctx, "kube-apiserver", apiserverTimeout, s.apiserverReady); err != nil {
		return err
	}
	s.logf("kube-apiserver ready in %s", since(s.procs[1].started))
	if err := s.start("kube-controller-manager", bin("kube-controller-manager"), controllerManagerArgs(l), nil); err != nil {
		return err
	}
	if err := s.start("kube-scheduler", bin("kube-scheduler"), schedulerArgs(l), nil); err != nil {
		return err
	}
	// KWOK_WORKDIR keeps kwok away from ~/.kwok (it would load ~/.kwok/kwok.yaml).
	kwokEnv := []string{"KWOK_WORKDIR=" + filepath.Join(s.Dir, "kwok")}
	if err := s.start("kwok", bin("kwok"), kwokArgs(l), kwokEnv); err != nil {
		return err
	}
	switch {
	case bins.sandbox == "":
		s.logf("no virt-sandbox binary (Options.SandboxBinary): no VM simulator, and host-executed pods will stay Pending")
	case hx.binary == "":
		s.logf("no virt-operator binary (Options.OperatorBinary, or one beside virt-sandbox): host-executed pods will stay Pending")
	default:
		if err := s.start(hostExecName, hx.binary, hostExecArgs(l, hx), nil); err != nil {
			return err
		}
	}
	vs, err := newVMSim(s.Dir, o, bins)
	if err != nil {
		return err
	}
	if vs.binary != "" {
		if err := s.start(vmSimName, vs.binary, vmSimArgs(l, vs), nil); err != nil {
			return err
		}
	}
	return s.converge(ctx, o, hx, vs)
}

// writeFiles generates certificates, the token file, kubeconfig, kwok stages and the
// audit policy, and sets s.rest.
func (s *Sandbox) writeFiles(stages []byte) error {
	l := s.layout
	certs, err := generateCerts(s.Dir)
	if err != nil {
		return fmt.Errorf("generating certificates: %w", err)
	}
	s.layout.Certs = certs
	token := randomToken()
	if err := writeTokenFile(l.TokenFile, token); err != nil {
		return err
	}
	if err := writeKubeconfig(l.Kubeconfig, l.serverURL(), certs.CAPEM, token); err != nil {
		return err
	}
	if err := os.WriteFile(l.StagesFile, stages, 0o644); err != nil {
		return err
	}
	if l.AuditLog != "" {
		if err := os.WriteFile(l.AuditPolicy, []byte(auditPolicy(l.AuditUsers)), 0o644); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(l.AuditLog), 0o755); err != nil {
			return err
		}
	}
	s.rest = restConfig(l.serverURL(), certs.CAPEM, token)
	return s.state.update(func(st *state) { st.Server = l.serverURL() })
}

// start launches a component and records its pid in state.json right away.
func (s *Sandbox) start(name, bin string, args, env []string) error {
	logPath := s.layout.logPath(name)
	// The command line heads the log, for whoever debugs a failed start.
	if err := os.WriteFile(logPath, []byte("# "+joinArgs(bin, args)+"\n"), 0o644); err != nil {
		return err
	}
	p, err := startProcess(name, bin, args, componentEnv(env, os.LookupEnv), logPath)
	if err != nil {
		return err
	}
	s.procs = append(s.procs, p)
	return s.state.update(func(st *state) {
		st.Processes = append(st.Processes, procState{Name: name, Pid: p.pid, Binary: bin})
	})
}

// Kubeconfig is the path of the admin kubeconfig, DIR/kubeconfig.
func (s *Sandbox) Kubeconfig() string { return filepath.Join(s.Dir, "kubeconfig") }

// WriteKubeconfig writes a kubeconfig of this sandbox's API server with token
// (a ServiceAccount's, say) to path.
func (s *Sandbox) WriteKubeconfig(path, token string) error {
	return writeKubeconfig(path, s.rest.Host, s.rest.CAData, token)
}

// RESTConfig returns a copy of the admin client configuration (client-go's default
// rate limits: callers measuring an operator should see realistic throttling).
func (s *Sandbox) RESTConfig() *rest.Config { return rest.CopyConfig(s.rest) }

// Stop stops every process and removes DIR: Down(s.Dir).
func (s *Sandbox) Stop() error { return Down(s.Dir) }

// CreateNodes adds n nodes, numbered after the existing ones, and waits until every
// kwok node is Ready.
func (s *Sandbox) CreateNodes(ctx context.Context, n int) error {
	start := time.Now()
	first, err := nextNodeIndex(ctx, s.client)
	if err != nil {
		return err
	}
	if err := createNodes(ctx, s.client, first, n); err != nil {
		return err
	}
	if err := s.waitFor(ctx, "kwok", stepTimeout+time.Duration(n)*50*time.Millisecond, s.nodesReady(first+n)); err != nil {
		return err
	}
	s.logf("%d nodes created and Ready in %s", n, since(start))
	return nil
}

func (s *Sandbox) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(line, "\n") {
		line += "\n"
	}
	_, _ = io.WriteString(s.log, line)
}

func since(t time.Time) string { return time.Since(t).Round(100 * time.Millisecond).String() }

// apiextensionsClient is built on demand: only Up with a CRD directory needs it.
func (s *Sandbox) apiextensionsClient() (apiextensions.Interface, error) {
	return apiextensions.NewForConfig(fastConfig(s.rest))
}
