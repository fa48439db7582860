package generate

import (
	"encoding/json"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

// gracefulShutdownSeconds is how long virt-handler gives VMs to shut down when it
// is asked to; the pod's grace period leaves it time to finish after that.
const gracefulShutdownSeconds = 315

// multusNetworksAnnotation attaches extra networks to a pod (Multus).
const multusNetworksAnnotation = "k8s.v1.cni.cncf.io/networks"

// hostDir is a host directory virt-handler mounts at the same path.
type hostDir struct {
	volume, path string
	shared       bool // bidirectional mount propagation
}

var handlerHostDirs = []hostDir{
	{"libvirt-runtimes", "/var/run/kubevirt-libvirt-runtimes", false},
	{"virt-share-dir", "/var/run/kubevirt", true},
	{"virt-private-dir", "/var/run/kubevirt-private", false},
	{"device-plugin", "/var/lib/kubelet/device-plugins", false},
	{"kubelet-pods", "/var/lib/kubelet/pods", true},
	{"node-labeller", "/var/lib/kubevirt-node-labeller", false},
}

// daemonSet is virt-handler: privileged, on every node, with the launcher image as
// init container (it labels the node with the host's CPU models and features, and
// pre-pulls the image VMs run in).
func (b *builder) daemonSet() {
	c := b.container(virtHandler, b.cfg.Image(deployid.Handler), append(append([]string{
		"--port", strconv.Itoa(portHTTPS),
		"--hostname-override", "$(NODE_NAME)",
		"--pod-ip-address", "$(MY_POD_IP)",
		"--max-metric-requests", "3",
		"--console-server-port", strconv.Itoa(portConsoleServer),
		"--graceful-shutdown-seconds", strconv.Itoa(gracefulShutdownSeconds),
	}, verbosity...), "--migration-cn-types", "migration"), "10m", "325Mi")
	c.Env = withoutNames(c.Env, "NODE_NAME", "MY_POD_IP")
	c.Env = append([]corev1.EnvVar{fieldEnv("NODE_NAME", "spec.nodeName"), fieldEnv("MY_POD_IP", "status.podIP")}, c.Env...)
	c.SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	c.ReadinessProbe = httpsProbe("/healthz", 15, 20)
	c.LivenessProbe = httpsProbe("/healthz", 15, 45)

	launcher := corev1.Container{
		Name:                     virtLauncher,
		Image:                    b.cfg.Image(deployid.Launcher),
		ImagePullPolicy:          b.cfg.ImagePullPolicy(),
		Command:                  []string{"/bin/sh", "-c"},
		Args:                     []string{"node-labeller.sh"},
		Env:                      b.cfg.PassthroughEnv(),
		SecurityContext:          &corev1.SecurityContext{Privileged: ptr.To(true)},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}

	spec := b.basePodSpec(saHandler)
	spec.HostPID = true
	spec.TerminationGracePeriodSeconds = ptr.To(int64(gracefulShutdownSeconds + 15))
	spec.InitContainers = []corev1.Container{launcher}
	spec.Containers = []corev1.Container{c}
	for _, d := range handlerHostDirs {
		spec.Volumes = append(spec.Volumes, hostPathVolume(d.volume, d.path))
		m := corev1.VolumeMount{Name: d.volume, MountPath: d.path}
		if d.shared {
			m.MountPropagation = ptr.To(corev1.MountPropagationBidirectional)
		}
		spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts, m)
		if d.volume == "node-labeller" {
			spec.InitContainers[0].VolumeMounts = []corev1.VolumeMount{m}
		}
	}
	mountCerts(&spec,
		certMount{secretHandlerCerts, "/etc/virt-handler/clientcertificates"},
		certMount{secretHandlerServerCerts, "/etc/virt-handler/servercertificates"},
		certMount{secretHandlerMigrationCerts, "/etc/virt-handler/migrationcertificates"},
		certMount{secretHandlerVsockCerts, "/etc/virt-handler/vsockcertificates"},
		certMount{secretHandlerMonitoringCerts, "/etc/virt-handler/monitoringcertificates"},
	)
	if b.cfg.PersistentReservationEnabled() {
		b.addPRHelper(&spec)
	}

	tmpl := b.podTemplate(virtHandler, metadata.RequiredSCCHandler, spec)
	if network := b.cfg.MigrationNetwork(); network != "" {
		raw, err := json.Marshal([]map[string]string{{"name": network, "namespace": b.ns, "interface": "migration0"}})
		b.fail(err)
		tmpl.Annotations[multusNetworksAnnotation] = string(raw)
	}
	maxUnavailable := intstr.FromInt32(1)
	b.add(&appsv1.DaemonSet{
		ObjectMeta: meta(virtHandler, b.ns, map[string]string{metadata.AppLabel: virtHandler, metadata.AppNameLabel: virtHandler}),
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: appLabel(virtHandler)},
			Template: tmpl,
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &maxUnavailable},
			},
		},
	})
}

// addPRHelper adds the SCSI persistent-reservation helper (FG PersistentReservation):
// a privileged daemon VMs reach through a socket in a host directory.
func (b *builder) addPRHelper(spec *corev1.PodSpec) {
	const socketDir = "/var/run/kubevirt/daemons/pr"
	spec.Volumes = append(spec.Volumes, hostPathVolume("pr-helper-socket", socketDir), hostPathVolume("dev", "/dev"))
	spec.Containers = append(spec.Containers, corev1.Container{
		Name:            "pr-helper",
		Image:           b.cfg.Image(deployid.PrHelper),
		ImagePullPolicy: b.cfg.ImagePullPolicy(),
		Command:         []string{"/entrypoint.sh"},
		Args:            []string{"-k", socketDir + "/pr-helper.sock"},
		Env:             b.cfg.PassthroughEnv(),
		SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "pr-helper-socket", MountPath: socketDir, MountPropagation: ptr.To(corev1.MountPropagationBidirectional)},
			{Name: "dev", MountPath: "/dev"},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	})
}

func hostPathVolume(name, path string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
		Path: path, Type: ptr.To(corev1.HostPathDirectoryOrCreate),
	}}}
}

// withoutNames drops the variables the component sets itself, so a pass-through
// variable cannot shadow them.
func withoutNames(env []corev1.EnvVar, names ...string) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, e := range env {
		keep := true
		for _, n := range names {
			keep = keep && e.Name != n
		}
		if keep {
			out = append(out, e)
		}
	}
	return out
}
