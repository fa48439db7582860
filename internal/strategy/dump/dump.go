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

var (
	// ErrNoConfig: TARGET_DEPLOYMENT_CONFIG is unset or empty.
	ErrNoConfig = errors.New("no config provided")
	// ErrInvalidConfig: TARGET_DEPLOYMENT_CONFIG is not a deployment config with an id.
	ErrInvalidConfig = errors.New("invalid " + ConfigEnv)
)

// Run dumps the install strategy for the config in env into a ConfigMap.
func Run(ctx context.Context, c client.Client, env deployid.Env, log logr.Logger) error {
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

	s, err := generate.Generate(generate.Input{Config: cfg, MonitorNamespace: monitorNS})
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
		"objects", len(s.Objects()), "encodedBytes", len(cm.Data[strategy.ManifestsKey]))
	return nil
}

// ConfigFromEnv parses TARGET_DEPLOYMENT_CONFIG, in upstream's shape (the id is
// taken as given, as upstream's Job takes it). Its errors are ErrNoConfig or wrap
// ErrInvalidConfig.
func ConfigFromEnv(env deployid.Env) (*deployid.Config, error) {
	raw, _ := env.Lookup(ConfigEnv)
	if strings.TrimSpace(raw) == "" {
		return nil, ErrNoConfig
	}
	cfg, err := deployid.ParseUpstream(raw)
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
