package generate

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// services: the headless metrics Service every component's pods join, virt-api's
// and virt-exportproxy's HTTPS Services, and the operator's webhook Service.
func (b *builder) services() {
	metrics := &corev1.Service{
		ObjectMeta: meta(svcPrometheusMetrics, b.ns, map[string]string{metadata.AppLabel: "", metadata.PrometheusLabel: "true"}),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  map[string]string{metadata.PrometheusLabel: "true"},
			Ports:     []corev1.ServicePort{servicePort(portNameMetrics, intstr.FromString(portNameMetrics))},
		},
	}
	b.add(metrics,
		b.clusterIPService(svcAPI, virtAPI, intstr.FromInt32(portHTTPS)),
		b.clusterIPService(svcOperatorWebhook, virtOperator, intstr.FromString(portNameWebhooks)),
		b.clusterIPService(svcExportProxy, virtExportProxy, intstr.FromInt32(portHTTPS)),
	)
}

// clusterIPService exposes port 443 of the pods of component app.
func (b *builder) clusterIPService(name, app string, target intstr.IntOrString) *corev1.Service {
	portName := "https"
	if target.Type == intstr.String {
		portName = target.StrVal
	}
	return &corev1.Service{
		ObjectMeta: meta(name, b.ns, appLabel(app)),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: appLabel(app),
			Ports:    []corev1.ServicePort{servicePort(portName, target)},
		},
	}
}

func servicePort(name string, target intstr.IntOrString) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: portService, TargetPort: target, Protocol: corev1.ProtocolTCP}
}
