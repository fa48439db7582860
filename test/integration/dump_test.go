package integration

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/dump"
)

// dumpConfig is a valid deployment config for namespace ns, with its id.
func dumpConfig(ns string) *deployid.Config {
	cfg := &deployid.Config{Namespace: ns, Registry: "quay.io/kubevirt", KubeVirtVersion: "v1.9.0"}
	cfg.ID = cfg.ComputeID()
	return cfg
}

func runDump(t *testing.T, ctx context.Context, env deployid.MapEnv) error {
	t.Helper()
	return dump.Run(ctx, k8s, env, logr.Discard())
}

func strategyConfigMaps(t *testing.T, ctx context.Context, ns string) []corev1.ConfigMap {
	t.Helper()
	list := &corev1.ConfigMapList{}
	if err := k8s.List(ctx, list, client.InNamespace(ns), client.HasLabels{metadata.InstallStrategyLabel}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// Dump mode stores a decodable strategy with upstream's identity and annotations
// plus the monitoring answer; running it again writes nothing.
func TestDumpCreatesTheStrategyConfigMapOnce(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t, ctx, "dump")
	cfg := dumpConfig(ns)
	env := deployid.MapEnv{dump.ConfigEnv: cfg.UpstreamJSON()}

	if err := runDump(t, ctx, env); err != nil {
		t.Fatal(err)
	}
	cms := strategyConfigMaps(t, ctx, ns)
	if len(cms) != 1 {
		t.Fatalf("%d strategy ConfigMaps, want 1", len(cms))
	}
	cm := cms[0]
	if cm.GenerateName != strategy.ConfigMapGenerateName || cm.Labels[metadata.ManagedByLabel] != metadata.ManagedByValue {
		t.Errorf("identity: generateName %q labels %v", cm.GenerateName, cm.Labels)
	}
	want := map[string]string{
		metadata.InstallStrategyIdentifierAnnotation:        cfg.ID,
		metadata.InstallStrategyVersionAnnotation:           "v1.9.0",
		metadata.InstallStrategyRegistryAnnotation:          "quay.io/kubevirt",
		metadata.InstallStrategyConfigMapEncodingAnnotation: "gzip+base64",
		strategy.MonitorNamespaceAnnotation:                 "",
	}
	for k, v := range want {
		if got, ok := cm.Annotations[k]; !ok || got != v {
			t.Errorf("annotation %s = %q (present %v), want %q", k, got, ok, v)
		}
	}
	s, err := strategy.Decode(&cm)
	if err != nil {
		t.Fatal(err)
	}
	// As upstream's, the strategy holds the OpenShift objects on any cluster.
	if len(s.Objects()) == 0 || len(s.ServiceMonitors) != 0 || len(s.SecurityContextConstraints) != 2 {
		t.Errorf("strategy: %d objects, %d ServiceMonitors, %d SCCs; want objects, no monitoring, 2 SCCs",
			len(s.Objects()), len(s.ServiceMonitors), len(s.SecurityContextConstraints))
	}
	t.Logf("stored %s: %d objects, %d bytes encoded", cm.Name, len(s.Objects()), len(cm.Data[strategy.ManifestsKey]))

	if err := runDump(t, ctx, env); err != nil {
		t.Fatal(err)
	}
	again := strategyConfigMaps(t, ctx, ns)
	if len(again) != 1 || again[0].ResourceVersion != cm.ResourceVersion {
		t.Fatalf("the second run changed the cache: %d ConfigMaps", len(again))
	}
}

// With Prometheus' ServiceAccount in the `monitoring` namespace, the strategy
// holds the monitoring objects and the ConfigMap records the namespace.
func TestDumpRecordsTheMonitoringNamespace(t *testing.T) {
	ctx := context.Background()
	monitoring := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}}
	if err := k8s.Create(ctx, monitoring); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: deployid.DefaultMonitorAccount}}
	if err := k8s.Create(ctx, account); err != nil {
		t.Fatal(err)
	}
	// The API server shares this namespace with other tests: leave no monitoring
	// behind (envtest never finishes deleting a namespace, so keep it and drop the SA).
	t.Cleanup(func() {
		if err := k8s.Delete(context.Background(), account); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the monitoring ServiceAccount: %v", err)
		}
	})

	ns := createNamespace(t, ctx, "dump-monitoring")
	if err := runDump(t, ctx, deployid.MapEnv{dump.ConfigEnv: dumpConfig(ns).UpstreamJSON()}); err != nil {
		t.Fatal(err)
	}
	cms := strategyConfigMaps(t, ctx, ns)
	if len(cms) != 1 {
		t.Fatalf("%d strategy ConfigMaps, want 1", len(cms))
	}
	if got := cms[0].Annotations[strategy.MonitorNamespaceAnnotation]; got != "monitoring" {
		t.Errorf("monitoring annotation %q, want monitoring", got)
	}
	s, err := strategy.Decode(&cms[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(s.ServiceMonitors) == 0 || len(s.PrometheusRules) == 0 {
		t.Errorf("%d ServiceMonitors, %d PrometheusRules; want both", len(s.ServiceMonitors), len(s.PrometheusRules))
	}
}

func TestDumpWithoutConfigFails(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t, ctx, "dump-noconfig")
	err := runDump(t, ctx, deployid.MapEnv{dump.NamespaceEnv: ns})
	if !errors.Is(err, dump.ErrNoConfig) || err.Error() != "no config provided" {
		t.Fatalf("got %v, want %q", err, "no config provided")
	}
	if cms := strategyConfigMaps(t, ctx, ns); len(cms) != 0 {
		t.Errorf("%d ConfigMaps written", len(cms))
	}
}
