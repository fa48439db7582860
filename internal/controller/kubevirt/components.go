package kubevirt

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/rollout"
)

// ReasonComponentCrashLooping: pods of a component Deployment on the target
// crash, so its step cannot roll over; the rollout holds there.
const ReasonComponentCrashLooping = "ComponentCrashLooping"

// crashLoopingPod is the first pod (by name) on target that crash-loops, with
// the container that failed; nil when none does.
func crashLoopingPod(pods []corev1.Pod, target metadata.Target) (*corev1.Pod, *corev1.ContainerStatus) {
	sorted := make([]*corev1.Pod, 0, len(pods))
	for i := range pods {
		sorted = append(sorted, &pods[i])
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, pod := range sorted {
		if pod.DeletionTimestamp != nil || !metadata.PodIsUpToDate(pod, target) {
			continue
		}
		if c := metadata.CrashedContainer(pod); c != nil {
			return pod, c
		}
	}
	return nil, nil
}

// crashLoopMessage names the Deployment, the pod, its node and the container.
// The restart count is left out: the message stays the same while the same pod
// crashes again, so it is reported once.
func crashLoopMessage(dep *appsv1.Deployment, pod *corev1.Pod, c *corev1.ContainerStatus) string {
	return fmt.Sprintf("deployment %s rollout failing: pod %s on node %s crash-loops on the target (container %s); the rollout holds until the pods run or the target changes",
		dep.Name, pod.Name, pod.Spec.NodeName, c.Name)
}

// failingDeployment explains why a step waits when one of its Deployments'
// pods on the target crash: Kubernetes keeps the old pods serving
// (maxUnavailable), but the step never rolls over, and without this the
// operator would wait in silence. "" when no pod of the step crashes.
func (r *Reconciler) failingDeployment(ctx context.Context, step apply.Step, target metadata.Target) (string, error) {
	deployments, _ := step.Workloads()
	for _, dep := range deployments {
		if dep.Spec.Selector == nil {
			continue
		}
		pods := &corev1.PodList{}
		if err := r.Client.List(ctx, pods, client.InNamespace(dep.Namespace), client.MatchingLabels(dep.Spec.Selector.MatchLabels)); err != nil {
			return "", fmt.Errorf("listing the pods of deployment %s: %w", dep.Name, err)
		}
		if pod, c := crashLoopingPod(pods.Items, target); pod != nil {
			return crashLoopMessage(dep, pod, c), nil
		}
	}
	return "", nil
}

// reportFailingDeployment sets the outcome's problem and, the first time this
// message is seen, a Warning FailedUpdate (the same reason as a failed
// virt-handler canary: a version whose pods crash).
func (r *Reconciler) reportFailingDeployment(kv *v1.KubeVirt, out *applyOutcome, message string) {
	if c := findCondition(kv.Status.Conditions, v1.KubeVirtConditionDegraded); c == nil || c.Reason != ReasonComponentCrashLooping || c.Message != message {
		r.warning(kv, rollout.ReasonFailedUpdate, "Rollout", message)
	}
	out.ProblemReason, out.ProblemMessage = ReasonComponentCrashLooping, message
}

// handlerRolloutUnderway: a virt-handler rollout to the target has started
// and is not over. Its canary is then judged on every pass, even while an
// earlier step waits (on the install order, virt-api can start crashing after
// the canary began): a crashing canary is still rolled back.
func handlerRolloutUnderway(kv *v1.KubeVirt) bool {
	st := kv.Status.HandlerRollout
	if st == nil || st.TargetID != kv.Status.TargetDeploymentID {
		return false
	}
	switch rollout.Phase(st.Phase) {
	case rollout.PhaseSuccessful, rollout.PhaseFailed:
		return false
	}
	return true
}
