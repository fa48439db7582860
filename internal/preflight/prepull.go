package preflight

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// PrepullLabel marks the pre-pull pods (kubevirt.io=virt-operator-preflight).
const (
	PrepullLabel = "kubevirt.io"
	PrepullValue = "virt-operator-preflight"
	// TargetAnnotation carries the deployment ID a pre-pull pod pulls for.
	TargetAnnotation = "kubevirt.io/preflight-target"
)

// PrepullTimeout is how long the images may take to pull before the check fails.
const PrepullTimeout = 5 * time.Minute

// poolLabels tell node pools apart: nodes alike in these pull alike.
var poolLabels = []string{"kubernetes.io/arch", "kubernetes.io/os", "node.kubernetes.io/instance-type"}

// Pools picks one Ready node per node pool (the first by name), sorted.
func Pools(nodes []corev1.Node) []string {
	byPool := map[string]string{}
	for _, n := range nodes {
		if !nodeReady(n) || n.Spec.Unschedulable {
			continue
		}
		var key []string
		for _, l := range poolLabels {
			key = append(key, n.Labels[l])
		}
		k := strings.Join(key, "/")
		if cur, ok := byPool[k]; !ok || n.Name < cur {
			byPool[k] = n.Name
		}
	}
	out := make([]string, 0, len(byPool))
	for _, n := range byPool {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PrepullPod pulls images on node: one container per image. A container only
// has to be created to prove its image pulled, so the command does not matter
// (distroless images have no shell; a failing start still counts).
func PrepullPod(namespace, targetID, node string, i int, images []string) *corev1.Pod {
	id := targetID
	if len(id) > 10 {
		id = id[:10]
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("virt-operator-preflight-%s-%d", id, i), Namespace: namespace,
			Labels: map[string]string{PrepullLabel: PrepullValue}, Annotations: map[string]string{TargetAnnotation: targetID}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         ptr.To(int64(PrepullTimeout.Seconds())),
			TerminationGracePeriodSeconds: ptr.To(int64(0)),
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			AutomountServiceAccountToken:  ptr.To(false),
		},
	}
	for j, img := range images {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
			Name: fmt.Sprintf("image-%d", j), Image: img, ImagePullPolicy: corev1.PullIfNotPresent,
			Command: []string{"/bin/true"},
		})
	}
	return pod
}

// pullFailures are the waiting reasons that mean the image cannot be pulled.
var pullFailures = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true}

// Images judges the pre-pull pods: Failed as soon as one container cannot
// pull (naming image and node), Passed when every container got past its
// pull on every node, else Running (Failed after PrepullTimeout).
func Images(pods []corev1.Pod, nodes int, started, now time.Time) v1.PreflightCheck {
	c := v1.PreflightCheck{Name: CheckImages, State: Running, Message: fmt.Sprintf("pulling on %d node pools", nodes)}
	pulled := 0
	for _, p := range pods {
		done := len(p.Status.ContainerStatuses) == len(p.Spec.Containers) && len(p.Spec.Containers) > 0
		for _, s := range p.Status.ContainerStatuses {
			if w := s.State.Waiting; w != nil {
				if pullFailures[w.Reason] {
					c.State = Failed
					c.Message = fmt.Sprintf("image %s cannot be pulled on node %s: %s %s", s.Image, p.Spec.NodeName, w.Reason, w.Message)
					return c
				}
				if w.Reason == "ContainerCreating" || w.Reason == "" {
					done = false
				}
			}
		}
		if done {
			pulled++
		}
	}
	switch {
	case nodes > 0 && pulled == nodes:
		c.State, c.Message = Passed, fmt.Sprintf("every image pulled on %d node pools", nodes)
	case nodes == 0:
		c.State, c.Message = Passed, "no Ready node to pull on"
	case now.Sub(started) > PrepullTimeout:
		c.State, c.Message = Failed, fmt.Sprintf("the images were not pulled within %s (%d of %d node pools done)", PrepullTimeout, pulled, nodes)
	}
	return c
}
