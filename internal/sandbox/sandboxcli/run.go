package sandboxcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/config/manager"
	"github.com/virt-operator/virt-operator/config/rbac"
	"github.com/virt-operator/virt-operator/internal/cliutil"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/operator"
	"github.com/virt-operator/virt-operator/internal/sandbox"
	"github.com/virt-operator/virt-operator/internal/sandbox/vmsim"
)

// NewRunCommand returns `run`, what `make run` calls: a sandbox, the operator in
// the foreground against it, and the sample KubeVirt CR; Ctrl-C stops the
// operator and tears the sandbox down. The terminal shows the story (the
// sandbox's start-up, the demo's progress); the operator's log goes to
// DIR/logs/virt-operator.log unless --log-to-terminal.
func NewRunCommand() *cobra.Command {
	var (
		o                                       runOptions
		dir, sample, crdDir, logFormat, opImage string
		nodes                                   int
		migrationDuration                       time.Duration
	)
	cmd := &cobra.Command{
		Use:           "run",
		Short:         "Start a sandbox, run the operator against it and apply a sample KubeVirt CR",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if migrationDuration <= 0 {
				return cliutil.UsageError(fmt.Errorf("--migration-duration must be positive, got %s", migrationDuration))
			}
			if err := o.show.validate(); err != nil {
				return cliutil.UsageError(err)
			}
			if logFormat != "json" && logFormat != "text" {
				return cliutil.UsageError(fmt.Errorf("--log-format must be json or text, not %q", logFormat))
			}
			kv, err := cliutil.LoadKubeVirt(sample)
			if err != nil {
				return cliutil.UsageError(err)
			}
			if kv.Namespace == "" {
				kv.Namespace = cliutil.DefaultNamespace()
			}
			o.kv, o.env = kv, sandboxOperatorEnv(opImage)
			o.out, o.progress = cmd.OutOrStdout(), cmd.ErrOrStderr()
			// The operator's log: the terminal's stderr, or the log file once the
			// sandbox directory exists (held in memory until then).
			logTo := o.progress
			if !o.logToTerminal {
				o.logFile = &deferredFile{}
				defer func() { _ = o.logFile.Close() }()
				logTo = o.logFile
			}
			if err := cliutil.SetupLogging(logFormat, logTo); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			o.sandbox = sandbox.Options{
				Dir: dir, Nodes: nodes, CRDDir: crdDir, Log: o.progress, MigrationDuration: migrationDuration,
			}
			return runSandboxedOperator(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", DefaultDir, "sandbox directory (kubeconfig, logs, data); removed on exit")
	f.IntVar(&nodes, "nodes", 3, "number of simulated nodes")
	f.StringVar(&sample, "sample", "config/samples/kubevirt.yaml", "KubeVirt CR to apply once the operator runs")
	f.StringVar(&crdDir, "crd-dir", DefaultCRDDir(), "directory of the CRDs to install")
	f.StringVar(&logFormat, "log-format", "text", "operator log format: json or text")
	f.BoolVar(&o.logToTerminal, "log-to-terminal", false, "write the operator's log to stderr instead of DIR/logs/"+operatorLogName)
	f.DurationVar(&migrationDuration, "migration-duration", vmsim.DefaultMigrationDuration, "how long the sandbox's VM simulator takes per live migration")
	f.IntVar(&o.show.VMs, "vms", 0, "VMs (runStrategy Always) to create once KubeVirt is Deployed")
	f.IntVar(&o.show.NonMigratable, "non-migratable", 0, "how many of --vms are not live-migratable (they are evicted on an upgrade)")
	f.StringVar(&o.show.UpgradeTo, "demo-upgrade", "", "after creating the VMs, upgrade to this spec.imageTag and print the VMs moving to the new launcher")
	f.StringVar(&opImage, "operator-image", "", "the operator image the deployment config derives from; default $VIRT_OPERATOR_IMAGE, else "+defaultSandboxOperatorImage)
	return cmd
}

// operatorLogName is the operator's log file in DIR/logs, beside the sandbox's
// components' (and the pod runner's and VM simulator's) own.
const operatorLogName = "virt-operator.log"

// runOptions are what `run` runs.
type runOptions struct {
	sandbox       sandbox.Options
	kv            *v1.KubeVirt
	env           deployid.Env
	show          demo
	logToTerminal bool
	logFile       *deferredFile // the operator's log, unless logToTerminal
	out           io.Writer     // the story: the lines to use the sandbox, the demo's progress
	progress      io.Writer     // the sandbox's start-up lines (and the log, with logToTerminal)
}

// defaultSandboxOperatorImage is this operator's own image (kwok never pulls it):
// the sample names the KubeVirt release in spec.imageTag, and the install-strategy
// Job, which runs this image, runs this binary on the sandbox's Job runner.
const defaultSandboxOperatorImage = "ghcr.io/virt-operator/virt-operator:devel"

// sandboxOperatorEnv is the process environment with the operator image set.
func sandboxOperatorEnv(image string) deployid.Env {
	env := deployid.EnvFromList(os.Environ())
	switch {
	case image != "":
		env["VIRT_OPERATOR_IMAGE"] = image
	case env["VIRT_OPERATOR_IMAGE"] == "" && env["OPERATOR_IMAGE"] == "":
		env["VIRT_OPERATOR_IMAGE"] = defaultSandboxOperatorImage
	}
	return env
}

// runSandboxedOperator brings the sandbox up, runs the operator and the demo
// until ctx ends, then stops them in order: the demo, the operator (which
// releases its lease while the API server still answers), the sandbox.
func runSandboxedOperator(ctx context.Context, o runOptions) (err error) {
	dir, err := filepath.Abs(o.sandbox.Dir)
	if err != nil {
		return err
	}
	o.sandbox.Dir = dir
	sb, err := sandbox.Up(ctx, o.sandbox)
	if err != nil {
		return cliutil.IgnoreCanceled(err) // Ctrl-C while starting: Up cleaned up
	}
	defer func() {
		fmt.Fprintln(o.out, "stopping the sandbox ...")
		err = errors.Join(err, sb.Stop())
	}()
	if o.logFile != nil {
		path := filepath.Join(dir, "logs", operatorLogName)
		if err := o.logFile.open(path); err != nil {
			return err
		}
		fmt.Fprintf(o.out, "Operator log: %s (--log-to-terminal, or LOG=1 make run, shows it here instead)\n", path)
		fmt.Fprintf(o.out, "Component logs (cluster, pod runner, VM simulator): %s%c\n", filepath.Dir(path), filepath.Separator)
	}

	scheme, err := operator.NewScheme()
	if err != nil {
		return err
	}
	c, err := client.New(sb.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	kv := o.kv
	if err := ensureOperatorPrerequisites(ctx, c, kv.Namespace); err != nil {
		return err
	}
	metricsAddr, err := freeLocalAddr()
	if err != nil {
		return err
	}
	opCtx, stopOperator := context.WithCancel(ctx)
	defer stopOperator()
	opDone := make(chan error, 1)
	go func() {
		opDone <- operator.Run(opCtx, sb.RESTConfig(), operator.Options{
			Namespace: kv.Namespace, MetricsAddr: metricsAddr, HealthAddr: "0", LeaderElection: true, Env: o.env,
		})
	}()
	if err := c.Create(ctx, kv); err != nil && !apierrors.IsAlreadyExists(err) {
		stopOperator()
		return errors.Join(fmt.Errorf("applying the sample KubeVirt CR: %w", err), cliutil.IgnoreCanceled(<-opDone))
	}
	fmt.Fprintf(o.out, "\nThe sandbox is up and the operator runs (metrics on https://%s/metrics, for a token allowed get /metrics: see README, Metrics).\n", metricsAddr)
	fmt.Fprintf(o.out, "In another shell:\n\n    export KUBECONFIG=%s\n    kubectl get nodes\n    kubectl get kubevirt -A\n    kubectl get vm,vmi,vmim\n\nPress Ctrl-C to stop and tear everything down.\n\n", sb.Kubeconfig())
	vc, err := vmsim.NewClient(sb.RESTConfig())
	if err != nil {
		stopOperator()
		return errors.Join(err, cliutil.IgnoreCanceled(<-opDone))
	}
	demoDone := make(chan struct{})
	go func() {
		defer close(demoDone)
		if err := o.show.run(opCtx, o.out, vc, client.ObjectKeyFromObject(kv)); err != nil && opCtx.Err() == nil {
			fmt.Fprintf(o.out, "the demo stopped: %v\n", err)
		}
	}()

	select {
	case <-ctx.Done():
		fmt.Fprintln(o.out, "\nstopping the operator ...")
		stopOperator()
		<-demoDone
		return cliutil.IgnoreCanceled(<-opDone)
	case err := <-opDone:
		stopOperator()
		<-demoDone
		if o.logFile != nil { // its log goes with the sandbox: show why it stopped
			fmt.Fprintf(o.progress, "the end of the operator's log:\n%s\n", o.logFile.tail(20))
		}
		return fmt.Errorf("the operator stopped: %w", err)
	}
}

// ensureOperatorPrerequisites creates what `kubectl apply -k config/default`
// gives a real install besides the operator's Deployment and CRD: its namespace,
// its ServiceAccounts and RBAC (the install-strategy Job runs under its own), and
// the components' PriorityClass. The manifests name namespace kubevirt.
func ensureOperatorPrerequisites(ctx context.Context, c client.Client, namespace string) error {
	pc, err := manager.PriorityClass()
	if err != nil {
		return err
	}
	rbacObjs, err := rbac.Objects()
	if err != nil {
		return err
	}
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, pc}
	for _, o := range rbacObjs {
		if o.GetNamespace() == "kubevirt" {
			o.SetNamespace(namespace)
		}
		objs = append(objs, o)
	}
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// freeLocalAddr returns a loopback address with a port that was free just now,
// so two sandboxes can run side by side.
func freeLocalAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Addr().(*net.TCPAddr).Port)), nil
}
