package install_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/rollout"
)

// A node no kubelet serves (kwok leaves it alone), reporting NotReady and
// cordoned, as an admin leaves a failed node: only DaemonSet pods (which
// tolerate the cordon) are scheduled there, and the virt-handler pod never
// runs. (The sandbox runs no node lifecycle controller to taint it not-ready.)
// Its name sorts before the sandbox's nodes, so a canary chosen in name order
// alone would be it.
const notReadyNode = "a-notready-node"

func (e *env) addNotReadyNode(t *testing.T) {
	ctx := context.Background()
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi")}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: notReadyNode, Labels: map[string]string{
		"kubernetes.io/hostname": notReadyNode, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}},
		Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}}}}
	if err := e.c.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // controllers annotate a new node
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return err
		}
		node.Status = corev1.NodeStatus{Capacity: res, Allocatable: res, Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "no kubelet",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}
		return e.c.Status().Update(ctx, node)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Issue 12's unhealthy fleet: one of 21 nodes is NotReady with a virt-handler
// pod that never runs. The install completes, the upgrade's canary is another
// node, and the upgrade completes, naming the node it left out. On the way, an
// updated pod restarting after the widening (a node reboot) is tolerated.
func TestNotReadyNodeIsNeitherCanaryNorBlocker(t *testing.T) {
	t.Parallel()
	e := startEnv(t, 20)
	e.addNotReadyNode(t)
	// A short bake: what is judged here is where the canary goes and what the
	// widened rollout tolerates, not the bake.
	e.createKubeVirt(v1.KubeVirtSpec{HandlerRollout: &v1.HandlerRolloutPolicy{BakeTime: &v1.Duration{Duration: 2 * time.Second}}})
	e.waitAvailable(3 * time.Minute)
	pods := &corev1.PodList{}
	if err := e.c.List(context.Background(), pods, client.InNamespace(namespace), client.MatchingFields{"spec.nodeName": notReadyNode},
		client.MatchingLabels{metadata.AppLabel: "virt-handler"}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || pods.Items[0].Status.Phase == corev1.PodRunning {
		t.Fatalf("want one virt-handler pod on %s that never runs, got %d", notReadyNode, len(pods.Items))
	}

	e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0" })
	var canaries []string
	restarted, tolerated, restartedAt := "", false, time.Time{}
	e.eventually("observed == target with the NotReady node left out", 3*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		st := kv.Status.HandlerRollout
		if st != nil && st.CanaryNode != "" && !strings.Contains(strings.Join(canaries, ","), st.CanaryNode) {
			canaries = append(canaries, st.CanaryNode)
		}
		if st != nil && restarted == "" && (st.Phase == string(rollout.PhaseIncreasing) || st.Phase == string(rollout.PhaseWaiting)) {
			restarted, restartedAt = e.restartAnUpdatedPod(t, st.CanaryPod), time.Now()
		}
		tolerated = tolerated || st != nil && strings.Contains(st.Message, "1 updated pods crashed, 2 tolerated after the canary")
		if st != nil && st.Phase == string(rollout.PhaseFailed) {
			t.Fatalf("the rollout failed: %s", st.Message)
		}
		return kv.Status.ObservedKubeVirtVersion == "v1.9.0" && kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID, nil
	})
	if restarted == "" {
		t.Fatal("the rollout went past the widening before a pod could be restarted")
	}
	final := e.kubeVirt().Status.HandlerRollout
	tolerated = tolerated || strings.Contains(final.Message, "1 updated pods crashed, 2 tolerated after the canary")
	switch {
	case tolerated:
	case final.PhaseChangeAt != nil && !final.PhaseChangeAt.After(restartedAt):
		// The status read lagged: the rollout was already Successful when the pod
		// restarted, and a finished rollout judges no crash.
		t.Logf("the restart of %s came after the rollout had completed", restarted)
	default:
		t.Fatalf("the restart of %s was never named in status.handlerRollout.message", restarted)
	}
	t.Logf("restarted %s after the widening; tolerated and named: %v", restarted, tolerated)
	st := e.kubeVirt().Status.HandlerRollout
	t.Logf("canaries %v; %s", canaries, st.Message)
	if strings.Contains(strings.Join(canaries, ","), notReadyNode) {
		t.Fatalf("the NotReady node was a canary: %v", canaries)
	}
	if !strings.Contains(st.Message, notReadyNode) {
		t.Fatalf("the completion does not name the node left out: %q", st.Message)
	}
}

// restartAnUpdatedPod makes a Ready virt-handler pod on the target (not the
// canary) report a restart, as after a node reboot; it returns its name, "" if
// none is there yet.
func (e *env) restartAnUpdatedPod(t *testing.T, canary string) string {
	ctx := context.Background()
	pods := &corev1.PodList{}
	if err := e.c.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{metadata.AppLabel: "virt-handler"}); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Name == canary || p.DeletionTimestamp != nil || !strings.HasSuffix(p.Spec.Containers[0].Image, ":v1.9.0") || !metadata.PodIsReady(p) {
			continue
		}
		p.Status.ContainerStatuses[0].RestartCount = 1
		p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 137, Reason: "Error", FinishedAt: metav1.Now()}}
		if err := e.c.Status().Update(ctx, p); err != nil {
			continue // kwok wrote it meanwhile; the next poll tries again
		}
		return p.Name
	}
	return ""
}
