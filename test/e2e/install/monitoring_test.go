package install_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/config/prometheus"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/operator"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// Upstream decides once whether monitoring exists and freezes the answer in the
// strategy; ours notices Prometheus arriving later and adds the ServiceMonitor
// and PrometheusRule without restarting any component. Prometheus' account
// then reads the operator's authenticated metrics through config/prometheus's
// binding.
func TestMonitoringArrivingLaterHealsTheStrategy(t *testing.T) {
	t.Parallel()
	e := startEnvWithoutOperator(t, 3)
	metricsAddr := sandboxtest.FreeAddr(t)
	e.startOperator(func(o *operator.Options) { o.MetricsAddr = metricsAddr })
	t.Cleanup(e.stopOperator)
	ctx := context.Background()
	e.createKubeVirt(v1.KubeVirtSpec{})
	kv := e.waitAvailable(2 * time.Minute)

	s := e.loadStrategy(kv.Status.TargetDeploymentID)
	if len(s.ServiceMonitors) != 0 || len(s.PrometheusRules) != 0 {
		t.Fatalf("without Prometheus the strategy has %d ServiceMonitors and %d PrometheusRules", len(s.ServiceMonitors), len(s.PrometheusRules))
	}
	api := e.podUIDs(map[string]string{metadata.AppLabel: "virt-api"})
	handler := e.podUIDs(map[string]string{metadata.AppLabel: "virt-handler"})

	e.installMonitoringCRDs()
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "prometheus-k8s", Namespace: "monitoring"}},
	} {
		if err := e.c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	start := time.Now()
	e.eventually("a ServiceMonitor and a PrometheusRule", 90*time.Second, func() (bool, error) {
		sms := &monitoringv1.ServiceMonitorList{}
		rules := &monitoringv1.PrometheusRuleList{}
		// Until the client's discovery sees the new CRDs a List fails: keep polling.
		smErr := e.c.List(ctx, sms, client.InNamespace("monitoring"))
		ruleErr := e.c.List(ctx, rules, client.InNamespace(namespace))
		return smErr == nil && ruleErr == nil && len(sms.Items) == 1 && len(rules.Items) == 1, nil
	})
	t.Logf("monitoring objects appeared %v after Prometheus' ServiceAccount", time.Since(start).Round(100*time.Millisecond))
	e.waitAvailable(time.Minute)

	cms := e.strategyConfigMaps()
	e.eventually("the stale strategy ConfigMap collected", time.Minute, func() (bool, error) {
		cms = e.strategyConfigMaps()
		return len(cms) == 1, nil
	})
	if meta, _ := strategy.Meta(&cms[0]); meta.MonitorNamespace != "monitoring" {
		t.Fatalf("the strategy in force records monitoring namespace %q", meta.MonitorNamespace)
	}
	if after := e.podUIDs(map[string]string{metadata.AppLabel: "virt-api"}); !sameKeys(api, after) {
		t.Fatalf("virt-api pods restarted: %v → %v", api, after)
	}
	if after := e.podUIDs(map[string]string{metadata.AppLabel: "virt-handler"}); !sameKeys(handler, after) {
		t.Fatalf("virt-handler pods restarted: %v → %v", handler, after)
	}
	e.scrapeAsPrometheus("https://" + metricsAddr + "/metrics")

	// The uninstall removes the monitoring objects too, the ServiceMonitor from
	// the monitoring namespace.
	if err := e.c.Delete(ctx, e.kubeVirt()); err != nil {
		t.Fatal(err)
	}
	e.eventually("the KubeVirt CR gone", 2*time.Minute, func() (bool, error) {
		err := e.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "kubevirt"}, &v1.KubeVirt{})
		return client.IgnoreNotFound(err) == nil && err != nil, nil
	})
	sms := &monitoringv1.ServiceMonitorList{}
	rules := &monitoringv1.PrometheusRuleList{}
	if err := e.c.List(ctx, sms, client.InNamespace("monitoring")); err != nil || len(sms.Items) != 0 {
		t.Errorf("after the uninstall: %d ServiceMonitors in monitoring (%v)", len(sms.Items), err)
	}
	if err := e.c.List(ctx, rules, client.InNamespace(namespace)); err != nil || len(rules.Items) != 0 {
		t.Errorf("after the uninstall: %d PrometheusRules (%v)", len(rules.Items), err)
	}
}

// scrapeAsPrometheus applies config/prometheus's reader binding and reads the
// operator's metrics with a token of Prometheus' account, which the operator has
// the API server authenticate and authorize; without the token it answers 401.
func (e *env) scrapeAsPrometheus(url string) {
	e.t.Helper()
	var crb rbacv1.ClusterRoleBinding
	for _, doc := range strings.Split(string(prometheus.Monitor), "\n---\n") {
		if strings.Contains(doc, "kind: ClusterRoleBinding") {
			if err := yaml.UnmarshalStrict([]byte(doc), &crb); err != nil {
				e.t.Fatal(err)
			}
		}
	}
	if err := e.c.Create(context.Background(), &crb); err != nil {
		e.t.Fatalf("config/prometheus's binding: %v", err)
	}
	if code, _ := sandboxtest.Scrape(url, ""); code != http.StatusUnauthorized {
		e.t.Errorf("metrics without a token: %d, want 401", code)
	}
	token := sandboxtest.Token(e.t, e.c, "monitoring", "prometheus-k8s")
	var body string
	e.eventually("Prometheus' account reads the metrics", time.Minute, func() (bool, error) {
		var code int
		code, body = sandboxtest.Scrape(url, token)
		return code == http.StatusOK, nil
	})
	if !strings.Contains(body, "kubevirt_virt_operator_ready_status") {
		e.t.Errorf("the metrics lack kubevirt_virt_operator_ready_status: %.300s", body)
	}
}

// installMonitoringCRDs applies the ServiceMonitor and PrometheusRule CRDs that
// `make generate` renders from the prometheus-operator API module.
func (e *env) installMonitoringCRDs() {
	e.t.Helper()
	dir := filepath.Join(sandboxtest.RepoRoot(), "test", "e2e", "testdata", "monitoring-crds")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) != 2 {
		e.t.Fatalf("monitoring CRDs in %s: %v %v (run make generate)", dir, files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			e.t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			e.t.Fatal(err)
		}
		if err := e.c.Create(context.Background(), crd); err != nil {
			e.t.Fatal(err)
		}
	}
	e.eventually("monitoring CRDs established", time.Minute, func() (bool, error) {
		for _, name := range []string{"servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"} {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := e.c.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
				return false, err
			}
			if !established(crd) {
				return false, nil
			}
		}
		return true, nil
	})
}
