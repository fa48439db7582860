package prometheus

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/virt-operator/virt-operator/config/manager"
	"github.com/virt-operator/virt-operator/config/rbac"
)

// The manifests are valid objects of their kinds (strictly: no misspelt field),
// the Service selects the operator's pods on its metrics port, the ServiceMonitor
// scrapes that Service over HTTPS with a token, and the binding grants the
// metrics reader role.
func TestMonitorManifests(t *testing.T) {
	docs := splitYAML(t, Monitor)
	if len(docs) != 3 {
		t.Fatalf("%d documents, want Service, ServiceMonitor, ClusterRoleBinding", len(docs))
	}
	svc, sm, crb := &corev1.Service{}, &monitoringv1.ServiceMonitor{}, &rbacv1.ClusterRoleBinding{}
	for i, obj := range []any{svc, sm, crb} {
		if err := yaml.UnmarshalStrict(docs[i], obj); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
	}
	dep, err := manager.Deployment()
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range svc.Spec.Selector {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, the operator's pods are labelled %v", k, v, dep.Spec.Template.Labels)
		}
	}
	hasPort := false
	for _, p := range dep.Spec.Template.Spec.Containers[0].Ports {
		hasPort = hasPort || p.Name == svc.Spec.Ports[0].TargetPort.String()
	}
	if !hasPort {
		t.Errorf("the Service targets port %q, which the operator's container does not name", svc.Spec.Ports[0].TargetPort.String())
	}
	for k, v := range sm.Spec.Selector.MatchLabels {
		if svc.Labels[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s, the Service is labelled %v", k, v, svc.Labels)
		}
	}
	ep := sm.Spec.Endpoints[0]
	if ep.Port != svc.Spec.Ports[0].Name || ep.Scheme == nil || *ep.Scheme != "https" || ep.BearerTokenFile == "" { //nolint:staticcheck // the token file is what every Prometheus version reads
		t.Errorf("endpoint %+v: want the Service's port, https and the ServiceAccount token", ep)
	}
	if crb.RoleRef.Name != rbac.MetricsReaderClusterRole {
		t.Errorf("the binding grants %s, want %s", crb.RoleRef.Name, rbac.MetricsReaderClusterRole)
	}
}

func splitYAML(t *testing.T, raw []byte) [][]byte {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var out [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			out = append(out, doc)
		}
	}
}
