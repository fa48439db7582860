// Package dump is the install-strategy Job's side: read the deployment config
// from the environment, detect the cluster facts the strategy depends on,
// generate the strategy and store it as a ConfigMap in the KubeVirt namespace
// (upstream §3.4). It writes only when the ConfigMap in force for the ID was not
// generated with the monitoring answer detected now, so a rerun changes nothing.
package dump

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

// Environment variables the Job sets.
const (
	// ConfigEnv holds the deployment config as JSON, with its id.
	ConfigEnv = "TARGET_DEPLOYMENT_CONFIG"
	// NamespaceEnv is the pod's namespace, used when the config has none.
	NamespaceEnv = "POD_NAMESPACE"
)

// OpenShiftGroupVersion is served only on OpenShift; with it the strategy holds
// SecurityContextConstraints and a Route.
const OpenShiftGroupVersion = "security.openshift.io/v1"

var (
	// ErrNoConfig: TARGET_DEPLOYMENT_CONFIG is unset or empty.
	ErrNoConfig = errors.New("no config provided")
	// ErrInvalidConfig: TARGET_DEPLOYMENT_CONFIG is not a config whose id matches its content.
	ErrInvalidConfig = errors.New("invalid " + ConfigEnv)
)

// APIDiscovery tells whether the API server serves a group/version. It is a
// seam so tests can pretend to be OpenShift.
type APIDiscovery interface {
	ServesGroupVersion(ctx context.Context, groupVersion string) (bool, error)
}

// ServerDiscovery answers from the API server's discovery endpoint.
type ServerDiscovery struct {
	Client discovery.ServerResourcesInterfaceWithContext
}

// NewServerDiscovery returns an APIDiscovery for the API server at cfg.
func NewServerDiscovery(cfg *rest.Config) (ServerDiscovery, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return ServerDiscovery{}, fmt.Errorf("creating a discovery client: %w", err)
	}
	return ServerDiscovery{Client: dc}, nil
}

// ServesGroupVersion implements APIDiscovery: NotFound means not served.
func (d ServerDiscovery) ServesGroupVersion(ctx context.Context, groupVersion string) (bool, error) {
	_, err := d.Client.ServerResourcesForGroupVersionWithContext(ctx, groupVersion)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("discovering %s: %w", groupVersion, err)
	}
}

// Run dumps the install strategy for the config in env into a ConfigMap.
func Run(ctx context.Context, c client.Client, apis APIDiscovery, env deployid.Env, log logr.Logger) error {
	cfg, err := ConfigFromEnv(env)
	if err != nil {
		return err
	}
	namespace := cfg.Namespace
	if namespace == "" {
		namespace, _ = env.Lookup(NamespaceEnv)
	}
	if namespace == "" {
		return fmt.Errorf("%w: the config has no namespace and %s is unset", ErrInvalidConfig, NamespaceEnv)
	}
	if cfg.Namespace == "" {
		// Generate on a copy that knows its namespace; the ConfigMap keeps the
		// config's own id, which is what the operator looks for.
		cfg = cfg.DeepCopy()
		cfg.Namespace = namespace
	}
	log = log.WithValues("deploymentID", cfg.ID, "namespace", namespace)

	monitorNS, err := strategy.DetectMonitorNamespace(ctx, c, cfg.PotentialMonitorNamespaces(), cfg.MonitorAccount())
	if err != nil {
		return err
	}
	if monitorNS == "" {
		log.Info("no monitoring ServiceAccount found: the strategy has no ServiceMonitor or PrometheusRule; the operator regenerates it when monitoring appears",
			"candidates", cfg.PotentialMonitorNamespaces(), "account", cfg.MonitorAccount())
	}

	existing := &corev1.ConfigMapList{}
	if err := c.List(ctx, existing, client.InNamespace(namespace), client.HasLabels{metadata.InstallStrategyLabel}); err != nil {
		return createError(fmt.Errorf("listing install strategy configmaps: %w", err))
	}
	if cm := strategy.FindForID(existing.Items, cfg.ID); strategy.Fresh(cm, monitorNS) {
		log.Info("install strategy configmap already exists", "configMap", cm.Name, "monitorNamespace", monitorNS)
		return nil
	}

	openShift, err := apis.ServesGroupVersion(ctx, OpenShiftGroupVersion)
	if err != nil {
		return createError(err)
	}
	s, err := generate.Generate(generate.Input{Config: cfg, MonitorNamespace: monitorNS, OpenShift: openShift})
	if err != nil {
		return createError(err)
	}
	cm, err := strategy.Encode(s, cfg, monitorNS)
	if err != nil {
		return createError(err)
	}
	cm.Namespace = namespace
	if err := c.Create(ctx, cm); err != nil {
		return createError(err)
	}
	log.Info("created install strategy configmap", "configMap", cm.Name, "monitorNamespace", monitorNS,
		"openShift", openShift, "objects", len(s.Objects()), "encodedBytes", len(cm.Data[strategy.ManifestsKey]))
	return nil
}

// ConfigFromEnv parses TARGET_DEPLOYMENT_CONFIG, checking its id. Its errors are
// ErrNoConfig or wrap ErrInvalidConfig.
func ConfigFromEnv(env deployid.Env) (*deployid.Config, error) {
	raw, _ := env.Lookup(ConfigEnv)
	if strings.TrimSpace(raw) == "" {
		return nil, ErrNoConfig
	}
	cfg, err := deployid.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return cfg, nil
}

// createError carries upstream's message for every failure after the config
// was read.
func createError(err error) error {
	return fmt.Errorf("failed to create new install strategy configmap: %w", err)
}
