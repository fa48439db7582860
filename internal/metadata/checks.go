package metadata

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IsUpToDate reports whether obj was rendered for target: all three
// install-strategy annotations are present and equal it. Nothing is up to date with
// a target that has no ID yet.
func IsUpToDate(obj metav1.Object, target Target) bool {
	if target.ID == "" {
		return false
	}
	a := obj.GetAnnotations()
	return hasValue(a, InstallStrategyVersionAnnotation, target.Version) &&
		hasValue(a, InstallStrategyRegistryAnnotation, target.Registry) &&
		hasValue(a, InstallStrategyIdentifierAnnotation, target.ID)
}

func hasValue(m map[string]string, key, want string) bool {
	v, ok := m[key]
	return ok && v == want
}

// TemplateTarget is the target a pod template is stamped with: its pods are
// current when they carry the same (PodIsUpToDate). After a change of other
// inputs only, it is the previous deployment's, kept so no pod restarts.
func TemplateTarget(tmpl *corev1.PodTemplateSpec) Target {
	a := tmpl.Annotations
	return Target{Version: a[InstallStrategyVersionAnnotation], Registry: a[InstallStrategyRegistryAnnotation], ID: a[InstallStrategyIdentifierAnnotation]}
}

// PodIsUpToDate reports whether the pod was created from a template of target.
func PodIsUpToDate(pod *corev1.Pod, target Target) bool { return IsUpToDate(pod, target) }

// DaemonSetIsUpToDate compares the DaemonSet's own annotations (not its pods').
func DaemonSetIsUpToDate(ds *appsv1.DaemonSet, target Target) bool { return IsUpToDate(ds, target) }

// DeploymentIsUpToDate compares the Deployment's own annotations (not its pods').
func DeploymentIsUpToDate(d *appsv1.Deployment, target Target) bool { return IsUpToDate(d, target) }

// PodIsReady: the pod is Running and every container reports Ready. A pod with no
// container statuses yet is not ready.
func PodIsReady(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning || len(pod.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, c := range pod.Status.ContainerStatuses {
		if !c.Ready {
			return false
		}
	}
	return true
}

// NodeIsReady: the node's Ready condition is True. (A pod on a node that
// stopped reporting keeps its last container statuses: only the node tells.)
func NodeIsReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// CrashLoopBackOff is the waiting reason of a container the kubelet keeps restarting.
const CrashLoopBackOff = "CrashLoopBackOff"

// PodIsCrashLooping reports whether any container of the pod has failed since it
// started: restartCount > 0, waiting in CrashLoopBackOff, or terminated now or in
// its last state. Operator components are long-running, so any termination is a
// failure; upstream uses the same rule (without the explicit CrashLoopBackOff check,
// which restartCount usually implies). Init containers are ignored: they terminate
// by design.
func PodIsCrashLooping(pod *corev1.Pod) bool { return CrashedContainer(pod) != nil }

// CrashedContainer is the first container of pod that crashed by PodIsCrashLooping's
// rule, or nil.
func CrashedContainer(pod *corev1.Pod) *corev1.ContainerStatus {
	for i, c := range pod.Status.ContainerStatuses {
		if c.RestartCount > 0 || c.State.Terminated != nil || c.LastTerminationState.Terminated != nil {
			return &pod.Status.ContainerStatuses[i]
		}
		if w := c.State.Waiting; w != nil && w.Reason == CrashLoopBackOff {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}
