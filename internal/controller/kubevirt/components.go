package kubevirt

import (
	"context"
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/diagnose"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/rollout"
)

// Reasons of the Degraded condition a component Deployment that cannot roll
// over sets; the rollout holds at its step.
const (
	// ReasonComponentCrashLooping: its pods on the target crash.
	ReasonComponentCrashLooping = "ComponentCrashLooping"
	// ReasonComponentPodsNotStarting: its pods on the target cannot be
	// scheduled, cannot start a container, or wait on a node that is not Ready.
	ReasonComponentPodsNotStarting = "ComponentPodsNotStarting"
	// ReasonComponentPodsNotCreated: its ReplicaSet or DaemonSet cannot create
	// pods (the API server refuses them).
	ReasonComponentPodsNotCreated = "ComponentPodsNotCreated"
)

// notStartingPod is the first pod (by name) on target that cannot start, with
// why; nil when none. nodeReady is every node's readiness.
func notStartingPod(pods []corev1.Pod, target metadata.Target, nodeReady map[string]bool) (*corev1.Pod, string) {
	for _, pod := range byName(pods) {
		if pod.DeletionTimestamp != nil || !metadata.PodIsUpToDate(pod, target) || metadata.PodIsReady(pod) {
			continue
		}
		if problem := diagnose.PodStartProblem(pod); problem != "" {
			return pod, problem
		}
		if node := pod.Spec.NodeName; node != "" && !nodeReady[node] {
			return pod, "waits on node " + node + ", which is not Ready"
		}
	}
	return nil, ""
}

func byName(pods []corev1.Pod) []*corev1.Pod {
	sorted := make([]*corev1.Pod, 0, len(pods))
	for i := range pods {
		sorted = append(sorted, &pods[i])
	}
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	return sorted
}

// crashLoopingPod is the first pod (by name) on target that crash-loops, with
// the container that failed; nil when none does.
func crashLoopingPod(pods []corev1.Pod, target metadata.Target) (*corev1.Pod, *corev1.ContainerStatus) {
	for _, pod := range byName(pods) {
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

// componentRecheck is how often a component that cannot get its pods running
// is looked at again: a ReplicaSet's or DaemonSet's failed pod creations, and a
// pod's scheduling, change no object the operator watches on every retry.
const componentRecheck = 2 * time.Second

// failingDeployment explains why a step waits when one of its Deployments
// cannot get its pods on the target running: its ReplicaSet cannot create them
// (the API server's refusal: a missing PriorityClass, a quota, Pod Security, a
// webhook), or they crash, or cannot start. Kubernetes keeps the old pods
// serving (maxUnavailable), but the step never rolls over, and without this the
// operator would wait in silence. nil when nothing stops the step.
func (r *Reconciler) failingDeployment(ctx context.Context, step apply.Step, live map[apply.ObjectRef]client.Object) (*problem, error) {
	deployments, _ := step.Workloads()
	var nodeReady map[string]bool
	for _, dep := range deployments {
		if dep.Spec.Selector == nil {
			continue
		}
		target := metadata.TemplateTarget(&dep.Spec.Template)
		if msg := replicaFailure(live[apply.RefOf(dep)]); msg != "" {
			return &problem{Reason: ReasonComponentPodsNotCreated, Warning: ReasonComponentPodsNotCreated,
				Message: fmt.Sprintf("deployment %s cannot create its pods: %s; the rollout holds until they can be created", dep.Name, msg)}, nil
		}
		pods := &corev1.PodList{}
		if err := r.Client.List(ctx, pods, client.InNamespace(dep.Namespace), client.MatchingLabels(dep.Spec.Selector.MatchLabels)); err != nil {
			return nil, fmt.Errorf("listing the pods of deployment %s: %w", dep.Name, err)
		}
		if pod, c := crashLoopingPod(pods.Items, target); pod != nil {
			return &problem{Reason: ReasonComponentCrashLooping, Message: crashLoopMessage(dep, pod, c), Warning: rollout.ReasonFailedUpdate}, nil
		}
		if nodeReady == nil {
			var err error
			if nodeReady, err = r.nodeReadiness(ctx); err != nil {
				return nil, err
			}
		}
		if pod, why := notStartingPod(pods.Items, target, nodeReady); pod != nil {
			return &problem{Reason: ReasonComponentPodsNotStarting, Warning: rollout.ReasonFailedUpdate,
				Message: fmt.Sprintf("deployment %s rollout waiting: pod %s %s; the rollout holds until the pods run or the target changes", dep.Name, pod.Name, why)}, nil
		}
	}
	return nil, nil
}

// replicaFailure is the message of a Deployment's ReplicaFailure condition (the
// Deployment controller copies it from its ReplicaSet, which sets it when the
// API server refuses a pod it creates); "" when there is none.
func replicaFailure(live client.Object) string {
	dep, ok := live.(*appsv1.Deployment)
	if !ok {
		return ""
	}
	for _, c := range dep.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return c.Message
		}
	}
	return ""
}
