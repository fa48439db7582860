package generate

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// certMount mounts one certificate secret into a component.
type certMount struct {
	secret, path string
}

// podTemplate wraps spec with the labels every component pod carries (its
// kubevirt.io name, the metrics label the kubevirt-prometheus-metrics Service
// selects, the network-policy label), the SCC it needs on OpenShift and the
// operator's metadata.
func (b *builder) podTemplate(name, scc string, spec corev1.PodSpec) corev1.PodTemplateSpec {
	t := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{
				metadata.AppLabel:                        name,
				metadata.AppNameLabel:                    name,
				metadata.PrometheusLabel:                 "true",
				metadata.AllowAccessClusterServicesLabel: "true",
			},
			Annotations: map[string]string{metadata.RequiredSCCAnnotation: scc},
		},
		Spec: spec,
	}
	metadata.InjectPodTemplate(&t, b.cfg)
	return t
}

// basePodSpec is what every component pod shares: its ServiceAccount, the
// critical priority class and toleration, and the pull secrets.
func (b *builder) basePodSpec(sa string) corev1.PodSpec {
	return corev1.PodSpec{
		ServiceAccountName: sa,
		PriorityClassName:  priorityClassKubeVirtCritical,
		Tolerations:        []corev1.Toleration{{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists}},
		ImagePullSecrets:   b.cfg.ImagePullSecrets(),
	}
}

// container is a component container with its image, pull policy, pass-through
// environment and the metrics port.
func (b *builder) container(name, image string, args []string, cpu, memory string) corev1.Container {
	return corev1.Container{
		Name:            name,
		Image:           image,
		ImagePullPolicy: b.cfg.ImagePullPolicy(),
		Command:         []string{name},
		Args:            args,
		Env:             b.cfg.PassthroughEnv(),
		Ports: []corev1.ContainerPort{
			{Name: portNameMetrics, ContainerPort: portHTTPS, Protocol: corev1.ProtocolTCP},
		},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cpu),
			corev1.ResourceMemory: resource.MustParse(memory),
		}},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

// restricted makes a pod and its containers meet the "restricted" Pod Security
// Standard: non-root, RuntimeDefault seccomp, no privilege escalation, no
// capabilities.
func restricted(spec *corev1.PodSpec) {
	spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	for i := range spec.Containers {
		spec.Containers[i].SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	}
}

// mountCerts adds a volume and a read-only mount per certificate secret to the
// first container. The secrets are optional so a pod can start while the
// operator is still issuing them.
func mountCerts(spec *corev1.PodSpec, certs ...certMount) {
	for _, c := range certs {
		spec.Volumes = append(spec.Volumes, corev1.Volume{
			Name: c.secret,
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: c.secret, Optional: ptr.To(true),
			}},
		})
		spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts,
			corev1.VolumeMount{Name: c.secret, MountPath: c.path, ReadOnly: true})
	}
}

// httpsProbe probes path on the component's HTTPS port.
func httpsProbe(path string, initialDelay, period int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromInt32(portHTTPS), Scheme: corev1.URISchemeHTTPS,
		}},
		InitialDelaySeconds: initialDelay,
		PeriodSeconds:       period,
		TimeoutSeconds:      10,
		FailureThreshold:    3,
	}
}

// spreadOverNodes prefers to put the replicas of component name on different nodes.
func spreadOverNodes(name string) *corev1.Affinity {
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 1,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: metadata.AppLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{name},
				}}},
				TopologyKey: corev1.LabelHostname,
			},
		}},
	}}
}

// fieldEnv is an environment variable from the downward API.
func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path},
	}}
}
