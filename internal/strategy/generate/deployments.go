package generate

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

// baseReplicas of every Deployment; spec.infra.replicas and virt-api's node-based
// count are applied later, by the apply engine.
const baseReplicas = 2

// verbosity of every component's log.
var verbosity = []string{"-v", "2"}

func (b *builder) deployments() {
	b.add(b.virtAPI(), b.virtController(), b.virtExportProxy())
	if b.cfg.DecentralizedLiveMigrationEnabled() {
		b.add(b.virtSyncController())
	}
}

func (b *builder) virtAPI() *appsv1.Deployment {
	c := b.container(virtAPI, b.cfg.Image(deployid.API), append([]string{
		"--port", strconv.Itoa(portHTTPS),
		"--console-server-port", strconv.Itoa(portConsoleServer),
		"--subresources-only",
	}, verbosity...), "5m", "500Mi")
	c.ReadinessProbe = httpsProbe("/apis/subresources.kubevirt.io/v1/healthz", 15, 10)
	spec := b.basePodSpec(saAPIServer)
	spec.Containers = []corev1.Container{c}
	mountCerts(&spec, certMount{secretAPICerts, "/etc/virt-api/certificates"})
	return b.deployment(virtAPI, spec)
}

func (b *builder) virtController() *appsv1.Deployment {
	c := b.container(virtController, b.cfg.Image(deployid.Controller), append([]string{
		"--launcher-image", b.cfg.Image(deployid.Launcher),
		"--exporter-image", b.cfg.Image(deployid.ExportServer),
		"--port", strconv.Itoa(portHTTPS),
	}, verbosity...), "10m", "275Mi")
	c.ReadinessProbe = httpsProbe("/leader", 15, 10)
	c.LivenessProbe = httpsProbe("/healthz", 15, 10)
	spec := b.basePodSpec(saController)
	spec.Containers = []corev1.Container{c}
	mountCerts(&spec, certMount{secretControllerCerts, "/etc/virt-controller/certificates"})
	return b.deployment(virtController, spec)
}

func (b *builder) virtExportProxy() *appsv1.Deployment {
	c := b.container(virtExportProxy, b.cfg.Image(deployid.ExportProxy),
		append([]string{"--port", strconv.Itoa(portHTTPS)}, verbosity...), "5m", "150Mi")
	c.ReadinessProbe = httpsProbe("/healthz", 15, 10)
	spec := b.basePodSpec(saExportProxy)
	spec.Containers = []corev1.Container{c}
	mountCerts(&spec, certMount{secretExportProxyCerts, "/etc/virt-exportproxy/certificates"})
	return b.deployment(virtExportProxy, spec)
}

// virtSyncController runs decentralized (cross-cluster) live migrations; it
// listens on the synchronization port for its peers.
func (b *builder) virtSyncController() *appsv1.Deployment {
	port := b.cfg.SynchronizationPort()
	c := b.container(virtSyncCtrl, b.cfg.Image(deployid.SynchronizationController), append([]string{
		"--port", strconv.Itoa(portHTTPS),
		"--synchronization-port", strconv.Itoa(int(port)),
	}, verbosity...), "10m", "150Mi")
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: "synchronization", ContainerPort: port, Protocol: corev1.ProtocolTCP})
	c.ReadinessProbe = httpsProbe("/healthz", 15, 10)
	spec := b.basePodSpec(saSyncCtrl)
	spec.Containers = []corev1.Container{c}
	mountCerts(&spec,
		certMount{secretSyncCtrlCerts, "/etc/virt-sync-controller/clientcertificates"},
		certMount{secretSyncCtrlServerCerts, "/etc/virt-sync-controller/servercertificates"},
	)
	return b.deployment(virtSyncCtrl, spec)
}

// deployment wraps spec as a restricted, spread-out Deployment of component name.
func (b *builder) deployment(name string, spec corev1.PodSpec) *appsv1.Deployment {
	restricted(&spec)
	spec.Affinity = spreadOverNodes(name)
	return &appsv1.Deployment{
		ObjectMeta: meta(name, b.ns, map[string]string{metadata.AppLabel: name, metadata.AppNameLabel: name}),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(baseReplicas)),
			Selector: &metav1.LabelSelector{MatchLabels: appLabel(name)},
			Template: b.podTemplate(name, metadata.RequiredSCCRestricted, spec),
		},
	}
}
