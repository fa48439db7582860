package generate

import (
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// runbookBase is where upstream KubeVirt publishes its alert runbooks.
const runbookBase = "https://kubevirt.io/monitoring/runbooks/"

// monitoring adds, when Prometheus was found, the RBAC that lets it scrape the
// KubeVirt namespace, the ServiceMonitor and (unless VMStatsCollector serves the
// rules itself) the PrometheusRule.
func (b *builder) monitoring() {
	monNS := b.in.MonitorNamespace
	if monNS == "" {
		return
	}
	b.add(&rbacv1.Role{
		ObjectMeta: meta(monitoringName, b.ns, nil),
		Rules: []rbacv1.PolicyRule{
			rule("", res("services", "endpoints", "pods"), verbsRead...),
			rule("discovery.k8s.io", res("endpointslices"), verbsRead...),
		},
	})
	b.add(&rbacv1.RoleBinding{
		ObjectMeta: meta(monitoringName, b.ns, nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: monitoringName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: b.cfg.MonitorAccount(), Namespace: monNS}},
	})

	smNS := b.cfg.ServiceMonitorNamespace()
	if smNS == "" {
		smNS = monNS
	}
	b.add(&monitoringv1.ServiceMonitor{
		ObjectMeta: meta(prometheusName, smNS, map[string]string{
			metadata.ClusterMonitoringLabel: "", metadata.PrometheusLabel: "true", metadata.K8sAppLabel: "kubevirt",
		}),
		Spec: monitoringv1.ServiceMonitorSpec{
			Selector:          metav1.LabelSelector{MatchLabels: map[string]string{metadata.PrometheusLabel: "true"}},
			NamespaceSelector: monitoringv1.NamespaceSelector{MatchNames: []string{b.ns}},
			Endpoints: []monitoringv1.Endpoint{{
				Port: portNameMetrics,
				// Lower case: older ServiceMonitor CRDs accept only http and https.
				Scheme: ptr.To(monitoringv1.Scheme("https")),
				HTTPConfigWithProxyAndTLSFiles: monitoringv1.HTTPConfigWithProxyAndTLSFiles{
					HTTPConfigWithTLSFiles: monitoringv1.HTTPConfigWithTLSFiles{
						TLSConfig: &monitoringv1.TLSConfig{SafeTLSConfig: monitoringv1.SafeTLSConfig{InsecureSkipVerify: ptr.To(true)}},
					},
				},
			}},
		},
	})

	if b.cfg.VMStatsCollectorEnabled() {
		return
	}
	b.add(&monitoringv1.PrometheusRule{
		ObjectMeta: meta(prometheusName, b.ns, map[string]string{metadata.PrometheusLabel: "true", metadata.K8sAppLabel: "kubevirt"}),
		Spec:       monitoringv1.PrometheusRuleSpec{Groups: b.ruleGroups()},
	})
}

// ruleGroups: recording rules for component availability, and the alerts an
// admin acts on.
func (b *builder) ruleGroups() []monitoringv1.RuleGroup {
	up := func(component string) string {
		return fmt.Sprintf(`sum(up{namespace=%q, pod=~"%s-.*"}) or vector(0)`, b.ns, component)
	}
	handlerSelector := fmt.Sprintf(`{namespace=%q, daemonset="virt-handler"}`, b.ns)
	return []monitoringv1.RuleGroup{
		{Name: "kubevirt.rules", Rules: []monitoringv1.Rule{
			record("kubevirt_virt_api_up", up(virtAPI)),
			record("kubevirt_virt_controller_up", up(virtController)),
			record("kubevirt_virt_handler_up", up(virtHandler)),
			record("kubevirt_virt_exportproxy_up", up(virtExportProxy)),
		}},
		{Name: "kubevirt.alerts", Rules: []monitoringv1.Rule{
			alert("VirtAPIDown", "kubevirt_virt_api_up == 0", "10m", "critical",
				"All virt-api servers are down."),
			alert("LowVirtAPICount", "kubevirt_virt_api_up < 2", "60m", "warning",
				"More than one virt-api should be running if more than one worker node exists."),
			alert("VirtControllerDown", "kubevirt_virt_controller_up == 0", "10m", "critical",
				"No running virt-controller was detected for the last 10 min."),
			alert("LowVirtControllersCount", "kubevirt_virt_controller_up < 2", "10m", "warning",
				"More than one virt-controller should be ready if more than one worker node exists."),
			alert("VirtHandlerDaemonSetRolloutFailing",
				"(kube_daemonset_status_number_misscheduled"+handlerSelector+" + kube_daemonset_status_desired_number_scheduled"+
					handlerSelector+" - kube_daemonset_status_number_ready"+handlerSelector+") != 0",
				"15m", "warning", "Some virt-handlers failed to roll out."),
			alert("OutdatedVirtualMachineInstanceWorkloads", "kubevirt_vmi_number_of_outdated != 0", "1440m", "warning",
				"Some running VMIs are still active in outdated pods after KubeVirt control plane update has completed."),
		}},
	}
}

func record(name, expr string) monitoringv1.Rule {
	return monitoringv1.Rule{Record: name, Expr: intstr.FromString(expr)}
}

func alert(name, expr, after, severity, summary string) monitoringv1.Rule {
	d := monitoringv1.Duration(after)
	return monitoringv1.Rule{
		Alert: name,
		Expr:  intstr.FromString(expr),
		For:   &d,
		Labels: map[string]string{
			"severity":                      severity,
			"operator_health_impact":        healthImpact(severity),
			"kubernetes_operator_part_of":   "kubevirt",
			"kubernetes_operator_component": "kubevirt",
		},
		Annotations: map[string]string{"summary": summary, "runbook_url": runbookBase + name},
	}
}

func healthImpact(severity string) string {
	if severity == "critical" {
		return "critical"
	}
	return "warning"
}
