package sandbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	nodeLabel      = "type"
	nodeLabelValue = "kwok"
	nodePrefix     = "node-"
	createWorkers  = 16
)

// nodeName numbers nodes node-000, node-001, ... (more digits past 999).
func nodeName(i int) string { return fmt.Sprintf("%s%03d", nodePrefix, i) }

// controlPlaneLabel marks node-000 as the cluster's control-plane node, where
// KubeVirt's control plane (and the install-strategy Job) goes by default.
const controlPlaneLabel = "node-role.kubernetes.io/control-plane"

// newNode is a kwok node. Its allocatable resources are set at creation, as a kubelet
// would register them; kwok's node-initialize stage keeps them. Each node gets its own
// /24 podCIDR so kwok hands out distinct pod IPs per node. The first one is also the
// control-plane node (untainted, so it runs workloads too).
func newNode(i int) *corev1.Node {
	name := nodeName(i)
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	cidr := fmt.Sprintf("10.%d.%d.0/24", 128+i/256%128, i%256)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"kubernetes.io/hostname": name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				nodeLabel:                nodeLabelValue,
			},
		},
		Spec:   corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res},
	}
	if i == 0 {
		node.Labels[controlPlaneLabel] = ""
	}
	return node
}

// nextNodeIndex returns one past the highest node-NNN index in the cluster, so nodes
// added later continue the numbering.
func nextNodeIndex(ctx context.Context, c kubernetes.Interface) (int, error) {
	list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	next := 0
	for _, n := range list.Items {
		if i, err := strconv.Atoi(strings.TrimPrefix(n.Name, nodePrefix)); err == nil && i >= next {
			next = i + 1
		}
	}
	return next, nil
}

// createNodes creates nodes first..first+n-1 with createWorkers concurrent calls.
func createNodes(ctx context.Context, c kubernetes.Interface, first, n int) error {
	idx := make(chan int)
	errs := make(chan error, createWorkers)
	var wg sync.WaitGroup
	for range min(createWorkers, n) {
		wg.Go(func() {
			for i := range idx {
				_, err := c.CoreV1().Nodes().Create(ctx, newNode(i), metav1.CreateOptions{})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- fmt.Errorf("creating node %s: %w", nodeName(i), err)
					return
				}
			}
		})
	}
	var err error
feed:
	for i := first; i < first+n; i++ {
		select {
		case idx <- i:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(idx)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// readyNodes counts the kwok nodes and those whose Ready condition is True.
func readyNodes(ctx context.Context, c kubernetes.Interface) (ready, total int, err error) {
	list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: nodeLabel + "=" + nodeLabelValue})
	if err != nil {
		return 0, 0, err
	}
	for _, n := range list.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready, len(list.Items), nil
}
