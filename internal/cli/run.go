package cli

import (
	"fmt"
	"math"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/virt-operator/virt-operator/internal/admission"
	"github.com/virt-operator/virt-operator/internal/cliutil"
	"github.com/virt-operator/virt-operator/internal/operator"
)

// NewRunCommand returns `run`: the operator itself.
func NewRunCommand() *cobra.Command {
	var (
		kubeconfig string
		logFormat  string
		opts       operator.Options
		workloads  bool
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the operator against a cluster",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := SetupLogging(logFormat); err != nil {
				return err
			}
			cfg, err := RESTConfig(kubeconfig)
			if err != nil {
				return err
			}
			if opts.Namespace == "" {
				opts.Namespace = DefaultNamespace()
			}
			opts.DisableWorkloadUpdates = !workloads
			gcPercent, memoryLimit, err := operator.TuneGC()
			if err != nil {
				return err
			}
			logMemorySettings(gcPercent, memoryLimit)
			return operator.Run(ctrl.SetupSignalHandler(), cfg, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file; default $KUBECONFIG, then in-cluster config")
	f.StringVar(&opts.Namespace, "namespace", "", "namespace the operator and the KubeVirt CR live in; default $POD_NAMESPACE, the pod's namespace, then kubevirt")
	f.StringVar(&opts.MetricsAddr, "metrics-bind-address", ":8080", "address of /metrics (HTTPS; the API server authenticates and authorizes each scraper: get on /metrics); 0 disables it")
	f.StringVar(&opts.MetricsCertDir, "metrics-cert-dir", "", "directory with tls.crt and tls.key for /metrics, reloaded on change; default a self-signed certificate")
	f.StringVar(&opts.PprofAddr, "pprof-bind-address", "0", "address of Go's /debug/pprof profiles; 0 disables it")
	f.StringVar(&opts.HealthAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz; 0 disables them")
	f.StringVar(&opts.WebhookAddr, "webhook-bind-address", fmt.Sprintf(":%d", admission.DefaultPort), "address of the KubeVirt CR's admission webhooks (TLS, the kubevirt-operator-certs certificate); 0 disables them")
	f.BoolVar(&opts.LeaderElection, "leader-elect", true, "elect a leader so only one replica reconciles")
	f.Float32Var(&opts.QPS, "kube-api-qps", operator.DefaultQPS, "requests per second to the API server")
	f.IntVar(&opts.Burst, "kube-api-burst", operator.DefaultBurst, "burst of requests to the API server")
	f.BoolVar(&workloads, "workload-updates", true, "move outdated VMIs onto the new virt-launcher after an upgrade (false: leave them alone)")
	f.StringVar(&logFormat, "log-format", "json", "log format: json or text")
	return cmd
}

// logMemorySettings says once what bounds the operator's heap, as `kubectl
// logs` is where an admin looks when the pod is OOM-killed.
func logMemorySettings(gcPercent int, memoryLimit int64) {
	var limit any = "none"
	if memoryLimit != math.MaxInt64 {
		limit = memoryLimit
	}
	ctrl.Log.WithName("setup").Info("Go memory settings", "gcPercent", gcPercent, "softMemoryLimitBytes", limit)
}

// SetupLogging routes controller-runtime and client-go logs through one
// structured logger on stderr.
func SetupLogging(format string) error { return cliutil.SetupLogging(format, os.Stderr) }

// RESTConfig loads the kubeconfig at path, or the default loading rules when
// path is empty.
func RESTConfig(path string) (*rest.Config, error) {
	if path == "" {
		return ctrl.GetConfig()
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %v", path, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// DefaultNamespace is $POD_NAMESPACE, the pod's own namespace, or kubevirt.
func DefaultNamespace() string { return cliutil.DefaultNamespace() }
