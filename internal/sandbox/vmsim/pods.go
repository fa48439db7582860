package vmsim

import (
	"hash/fnv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Scheduling of launcher pods onto the sandbox's kwok nodes (see sandbox/nodes.go).
const (
	kwokNodeLabel      = "type"
	kwokNodeLabelValue = "kwok"
	kwokTaintKey       = "kwok.x-k8s.io/node"
)

// podNameSuffixChars are the characters Kubernetes uses for generated names.
const podNameSuffixChars = "bcdfghjklmnpqrstvwxz2456789"

// launcherPodName is virt-launcher-<vmi>-<5 chars>, the shape generateName gives
// upstream. The suffix is derived from the owning UID (the VMI's, or the
// migration's for a target pod) instead of being random: a repeated create, from a
// stale cache or a restarted simulator, then meets AlreadyExists instead of making
// a second pod, with no in-memory bookkeeping.
func launcherPodName(vmiName string, owner types.UID) string {
	base := "virt-launcher-" + vmiName + "-"
	const maxBase = 63 - 5 // as generateName truncates
	if len(base) > maxBase {
		base = base[:maxBase]
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(owner))
	sum := h.Sum64()
	suffix := make([]byte, 5)
	for i := range suffix {
		suffix[i] = podNameSuffixChars[sum%uint64(len(podNameSuffixChars))]
		sum /= uint64(len(podNameSuffixChars))
	}
	return base + string(suffix)
}

// launcherPod is the virt-launcher pod of vmi running image. kwok makes it Running
// once kube-scheduler binds it to a kwok node (NodeAnnotation's, when set).
func launcherPod(vmi *v1.VirtualMachineInstance, image string) *corev1.Pod {
	pod := newLauncherPod(vmi, image)
	if node := vmi.Annotations[NodeAnnotation]; node != "" {
		pod.Spec.NodeSelector[corev1.LabelHostname] = node
	}
	return pod
}

func newLauncherPod(vmi *v1.VirtualMachineInstance, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      launcherPodName(vmi.Name, vmi.UID),
			Namespace: vmi.Namespace,
			Labels: map[string]string{
				AppLabel:       LauncherApp,
				CreatedByLabel: string(vmi.UID),
				VMNameLabel:    vmi.Name,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         v1.GroupVersion.String(),
				Kind:               "VirtualMachineInstance",
				Name:               vmi.Name,
				UID:                vmi.UID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			Containers:   []corev1.Container{{Name: ComputeContainer, Image: image}},
			NodeSelector: map[string]string{kwokNodeLabel: kwokNodeLabelValue},
			Tolerations: []corev1.Toleration{{
				Key: kwokTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
			}},
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
		},
	}
}

// targetPod is the launcher pod a migration moves vmi to. It prefers a node other
// than the source's (preferred, not required: a one-node sandbox still migrates)
// and records what the migration needs to resume after a restart.
func targetPod(vmi *v1.VirtualMachineInstance, m *v1.VirtualMachineInstanceMigration, source *corev1.Pod, image string, start time.Time) *corev1.Pod {
	pod := newLauncherPod(vmi, image)
	pod.Name = launcherPodName(vmi.Name, m.UID)
	pod.Labels[MigrationJobLabel] = string(m.UID)
	pod.Annotations = map[string]string{
		MigrationAnnotation:      m.Name,
		MigrationStartAnnotation: start.UTC().Format(time.RFC3339Nano),
		SourcePodAnnotation:      source.Name,
	}
	for k, v := range m.Spec.AddedNodeSelector { // the VMI's own placement wins a collision
		if _, set := pod.Spec.NodeSelector[k]; !set {
			pod.Spec.NodeSelector[k] = v
		}
	}
	pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{CreatedByLabel: string(vmi.UID)}},
				TopologyKey:   "kubernetes.io/hostname",
			},
		}},
	}}
	return pod
}

// computeImage is the image of a launcher pod's compute container.
func computeImage(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == ComputeContainer {
			return c.Image
		}
	}
	return ""
}

// podGone: deleted, being deleted (an eviction) or finished.
func podGone(pod *corev1.Pod) bool {
	return pod == nil || pod.DeletionTimestamp != nil ||
		pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// podRunning: bound and made Running by kwok.
func podRunning(pod *corev1.Pod) bool {
	return !podGone(pod) && pod.Spec.NodeName != "" && pod.Status.Phase == corev1.PodRunning
}

// findPod returns the pod of pods matching keep, or nil.
func findPod(pods []corev1.Pod, keep func(*corev1.Pod) bool) *corev1.Pod {
	for i := range pods {
		if keep(&pods[i]) {
			return &pods[i]
		}
	}
	return nil
}

// activePod is the pod the VMI runs in according to status.activePods.
func activePod(vmi *v1.VirtualMachineInstance, pods []corev1.Pod) *corev1.Pod {
	return findPod(pods, func(p *corev1.Pod) bool {
		_, ok := vmi.Status.ActivePods[p.UID]
		return ok
	})
}
