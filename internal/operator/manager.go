// Package operator wires the operator process: the controller-runtime manager
// with leader election, health and metrics endpoints, and the controllers it
// runs. It owns no reconcile logic itself.
package operator

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/config/rbac"
	"github.com/virt-operator/virt-operator/internal/absentkinds"
	"github.com/virt-operator/virt-operator/internal/admission"
	"github.com/virt-operator/virt-operator/internal/controller/certificates"
	"github.com/virt-operator/virt-operator/internal/controller/eventrecorder"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt"
	"github.com/virt-operator/virt-operator/internal/controller/workloadupdate"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/version"
	"github.com/virt-operator/virt-operator/internal/workloadcache"
)

// Options configure one operator process.
type Options struct {
	// Namespace the operator runs in; the KubeVirt CR must live here.
	Namespace string
	// MetricsAddr serves /metrics over HTTPS to clients the API server
	// authenticates (TokenReview) and authorizes (SubjectAccessReview: get on the
	// non-resource URL /metrics, which config/rbac's virt-operator-metrics-reader
	// grants); "0" disables it.
	MetricsAddr string
	// MetricsCertDir holds tls.crt and tls.key for /metrics (reloaded when they
	// change); empty: a self-signed certificate, as kube-controller-manager's.
	MetricsCertDir string
	// HealthAddr serves /healthz and /readyz; "0" disables it.
	HealthAddr string
	// PprofAddr serves Go's /debug/pprof (heap and CPU profiles); "" or "0" is off.
	PprofAddr string
	// WebhookAddr serves the KubeVirt CR's admission webhooks over TLS (package
	// admission); "" or "0" disables it.
	WebhookAddr string
	// LeaderElection makes only one replica reconcile at a time.
	LeaderElection bool
	// LeaderElectionID names the Lease used for leader election.
	LeaderElectionID string
	// Env is the environment the deployment config is read from; nil means
	// the process environment.
	Env deployid.Env
	// ServiceAccount runs the install-strategy Job; default
	// virt-operator-strategy-dumper (config/rbac/strategy_dumper.yaml).
	ServiceAccount string
	// QPS and Burst limit the operator's requests to the API server; zero takes
	// DefaultQPS and DefaultBurst.
	QPS   float32
	Burst int
	// DisableWorkloadUpdates turns the workload updater off: outdated VMIs are
	// then neither counted nor moved.
	DisableWorkloadUpdates bool
}

func (o Options) env() deployid.Env {
	if o.Env == nil {
		return deployid.OSEnv{}
	}
	return o.Env
}

func (o Options) serviceAccount() string {
	if o.ServiceAccount == "" {
		return rbac.StrategyDumperServiceAccount
	}
	return o.ServiceAccount
}

// cacheByObject bounds what the cache holds, so the operator's memory does not
// grow with the cluster: namespaced kinds only in the operator's namespace;
// ServiceAccounts there, and elsewhere only Prometheus' default account, whose
// appearance turns monitoring on; Roles and RoleBindings there, and elsewhere
// the managed ones (a strategy puts some in kube-system and the monitoring
// namespace: read from the API server, each was a request per pass); the
// cluster-scoped kinds a strategy holds only where they carry the managed-by
// label (the operator writes them with it, by server-side apply, so an
// unlabelled one of the same name is taken over by the first write and cached
// from then on).
func cacheByObject(namespace string) map[client.Object]cache.ByObject {
	out := map[client.Object]cache.ByObject{}
	managed := metadata.ManagedSelector()
	for _, kind := range kubevirt.CachedNamespacedKinds() {
		namespaces := map[string]cache.Config{namespace: {}}
		switch kind.(type) {
		case *rbacv1.Role, *rbacv1.RoleBinding:
			namespaces[cache.AllNamespaces] = cache.Config{LabelSelector: managed}
		}
		out[kind] = cache.ByObject{Namespaces: namespaces}
	}
	out[&corev1.ServiceAccount{}] = cache.ByObject{Namespaces: map[string]cache.Config{
		namespace:           {},
		cache.AllNamespaces: {FieldSelector: fields.OneTermEqualSelector("metadata.name", deployid.DefaultMonitorAccount)},
	}}
	for _, kind := range kubevirt.ManagedClusterKinds() {
		out[kind] = cache.ByObject{Label: managed}
	}
	return out
}

// notCached are the kinds the manager's cache never holds: the VMIs and
// migrations, which package workloadcache keeps in compact forms. A read of
// them through the manager's client goes to the API server instead of
// filling the cache with every object decoded (tens of megabytes at 10,000
// VMIs).
func notCached() []client.Object {
	return []client.Object{&v1.VirtualMachineInstance{}, &v1.VirtualMachineInstanceMigration{}}
}

// metricsOptions serve /metrics with TLS, each scrape authenticated and
// authorized by the API server (metricsAuth), and HTTP/1.1 only (HTTP/2's rapid-reset and stream-flood attacks
// need no credentials).
func metricsOptions(o Options) metricsserver.Options {
	return metricsserver.Options{
		BindAddress:    o.MetricsAddr,
		SecureServing:  true,
		CertDir:        o.MetricsCertDir,
		FilterProvider: metricsAuth,
		TLSOpts:        []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
	}
}

// Client-side rate limits: client-go's defaults (5 QPS) would queue an upgrade's
// writes and the workload updater's migrations and Events behind each other.
const (
	DefaultQPS   = 50
	DefaultBurst = 100
)

// UserAgent is the operator's user agent towards the API server.
var UserAgent = "virt-operator/" + version.Version + " (operator)"

// DefaultLeaderElectionID is the Lease name replicas of the operator compete for.
const DefaultLeaderElectionID = "virt-operator"

// NewScheme returns the scheme with every type the operator reads or writes.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := strategy.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, nil
}

// Leader election needs its Lease in the operator's namespace.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=kubevirt,resources=leases,verbs=get;create;update
// The strategy Job's Events say why its pod is refused (a missing ServiceAccount, a quota).
// +kubebuilder:rbac:groups="",namespace=kubevirt,resources=events,verbs=list

// Run starts the manager and blocks until ctx is cancelled or it fails.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	if o.Namespace == "" {
		return fmt.Errorf("operator namespace is empty: set --namespace or POD_NAMESPACE")
	}
	scheme, err := NewScheme()
	if err != nil {
		return err
	}
	// A user agent of its own lets the API server's audit log tell the
	// operator's requests from everyone else's.
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = UserAgent
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	if cfg.QPS <= 0 {
		cfg.QPS = DefaultQPS
	}
	if cfg.Burst <= 0 {
		cfg.Burst = DefaultBurst
	}
	if o.LeaderElectionID == "" {
		o.LeaderElectionID = DefaultLeaderElectionID
	}
	// controller-runtime's defaults, spelled out so they are read here: a
	// successor takes over within 15 s of a crash (at once after a clean stop,
	// which releases the lease); the renewals are the only writes at rest.
	leaseDuration, renewDeadline, retryPeriod := 15*time.Second, 10*time.Second, 2*time.Second
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsOptions(o),
		HealthProbeBindAddress:  o.HealthAddr,
		PprofBindAddress:        o.PprofAddr,
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        o.LeaderElectionID,
		LeaderElectionNamespace: o.Namespace,
		LeaseDuration:           &leaseDuration,
		RenewDeadline:           &renewDeadline,
		RetryPeriod:             &retryPeriod,
		// Release the lease on shutdown so a successor does not wait a full lease,
		// and log that as the stop it is, not as a lost election.
		LeaderElectionReleaseOnCancel: true,
		Logger:                        shutdownLogger(ctx, ctrl.Log),
		Cache:                         cache.Options{ByObject: cacheByObject(o.Namespace), DefaultTransform: cacheTransform()},
		Client:                        client.Options{Cache: &client.CacheOptions{DisableFor: notCached()}},
		// Off OpenShift, SCCs and Routes are asked for on every pass.
		MapperProvider: func(c *rest.Config, hc *http.Client) (meta.RESTMapper, error) {
			m, err := apiutil.NewDynamicRESTMapper(c, hc)
			if err != nil {
				return nil, err
			}
			return absentkinds.New(m, absentkinds.OpenShiftGroups, time.Now), nil
		},
		// Tests run one operator after another in the same process; the
		// controller's name is only unique per manager.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	ready := &readiness{cache: mgr.GetCache()}
	if err := mgr.AddReadyzCheck("readyz", ready.check); err != nil {
		return err
	}
	if err := mgr.Add(ready); err != nil {
		return err
	}
	if err := mgr.Add(leading{}); err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the discovery client: %w", err)
	}
	events, err := eventrecorder.NewForConfig(cfg, mgr.GetScheme(), "virt-operator", ctrl.Log.WithName("events"))
	if err != nil {
		return err
	}
	if err := mgr.Add(events); err != nil {
		return err
	}
	workloads, err := workloadcache.New(cfg, mgr.GetScheme(), mgr.GetRESTMapper(), ctrl.Log.WithName("workloadcache"))
	if err != nil {
		return err
	}
	if err := mgr.Add(workloads); err != nil {
		return err
	}
	wants := certificates.NewWants()
	certificateController := &certificates.Reconciler{Client: mgr.GetClient(), Namespace: o.Namespace, Recorder: events, Wants: wants}
	if err := certificateController.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the certificate controller: %w", err)
	}
	reconciler := &kubevirt.Reconciler{
		Certificates:    wants,
		ServerVersion:   dc.ServerVersion,
		Resources:       dc.ServerResourcesForGroupVersion,
		Client:          mgr.GetClient(),
		APIReader:       mgr.GetAPIReader(),
		Workloads:       workloads,
		Namespace:       o.Namespace,
		Recorder:        events,
		Env:             o.env(),
		OperatorVersion: version.Version,
		ServiceAccount:  o.serviceAccount(),
	}
	if err := reconciler.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the KubeVirt controller: %w", err)
	}
	if !o.DisableWorkloadUpdates {
		updater := &workloadupdate.Reconciler{
			Client:    mgr.GetClient(),
			APIReader: mgr.GetAPIReader(),
			Workloads: workloads,
			Namespace: o.Namespace,
			Recorder:  events,
		}
		if err := updater.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the workload updater: %w", err)
		}
	}
	if o.WebhookAddr != "" && o.WebhookAddr != "0" {
		if err := mgr.Add(&admission.Server{
			Addr: o.WebhookAddr, Namespace: o.Namespace, Reader: mgr.GetClient(), Workloads: mgr.GetAPIReader(),
			Env: o.env(), Log: ctrl.Log.WithName("webhooks"),
		}); err != nil {
			return err
		}
	}
	ctrl.Log.WithName("operator").Info("starting", "namespace", o.Namespace, "leaderElection", o.LeaderElection,
		"workloadUpdates", !o.DisableWorkloadUpdates)
	return mgr.Start(ctx)
}
