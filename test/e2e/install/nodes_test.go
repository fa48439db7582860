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

// Issue 12's NotReady node: one of 21 nodes is NotReady with a virt-handler
// pod that never runs. The install completes, the upgrade's canary is another
// node, and the upgrade completes, naming the node it left out.
func TestNotReadyNodeIsNeitherCanaryNorBlocker(t *testing.T) {
	e := startEnv(t, 20)
	e.addNotReadyNode(t)
	e.createKubeVirt(v1.KubeVirtSpec{})
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
	e.eventually("observed == target with the NotReady node left out", 3*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		if st := kv.Status.HandlerRollout; st != nil && st.CanaryNode != "" && !strings.Contains(strings.Join(canaries, ","), st.CanaryNode) {
			canaries = append(canaries, st.CanaryNode)
		}
		return kv.Status.ObservedKubeVirtVersion == "v1.9.0" && kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID, nil
	})
	st := e.kubeVirt().Status.HandlerRollout
	t.Logf("canaries %v; %s", canaries, st.Message)
	if strings.Contains(strings.Join(canaries, ","), notReadyNode) {
		t.Fatalf("the NotReady node was a canary: %v", canaries)
	}
	if !strings.Contains(st.Message, notReadyNode) {
		t.Fatalf("the completion does not name the node left out: %q", st.Message)
	}
}
