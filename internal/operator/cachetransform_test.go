package operator

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCacheTransform(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
	transform := cacheTransform()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: managed, Labels: map[string]string{"kubevirt.io": "virt-handler"}},
		Spec: corev1.PodSpec{NodeName: "n1", ServiceAccountName: "kubevirt-handler",
			Volumes:        []corev1.Volume{{Name: "libvirt-runtimes"}},
			InitContainers: []corev1.Container{{Name: "init", Image: "virt-launcher:v1", Command: []string{"/bin/sh"}}},
			Containers: []corev1.Container{{Name: "virt-handler", Image: "virt-handler:v1", Args: []string{"--port", "8443"},
				Env: []corev1.EnvVar{{Name: "NODE_NAME"}}, VolumeMounts: []corev1.VolumeMount{{Name: "libvirt-runtimes"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "virt-handler", RestartCount: 2}}}}
	out, err := transform(pod)
	if err != nil {
		t.Fatal(err)
	}
	p := out.(*corev1.Pod)
	want := corev1.PodSpec{NodeName: "n1", InitContainers: []corev1.Container{{Name: "init", Image: "virt-launcher:v1"}},
		Containers: []corev1.Container{{Name: "virt-handler", Image: "virt-handler:v1"}}}
	if p.ManagedFields != nil || p.Labels["kubevirt.io"] != "virt-handler" || p.Status.ContainerStatuses[0].RestartCount != 2 {
		t.Fatalf("pod metadata or status changed: %+v", p)
	}
	if len(p.Spec.Volumes) > 0 || p.Spec.ServiceAccountName != "" || p.Spec.NodeName != want.NodeName ||
		len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Args != nil || p.Spec.Containers[0].Image != "virt-handler:v1" ||
		p.Spec.InitContainers[0].Command != nil {
		t.Fatalf("pod spec after the transform: %+v, want %+v", p.Spec, want)
	}

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"kubernetes.io/arch": "amd64"}},
		Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: "k"}}},
		Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"a"}, SizeBytes: 1}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	out, err = transform(node)
	if err != nil {
		t.Fatal(err)
	}
	if n := out.(*corev1.Node); n.Status.Images != nil || len(n.Status.Conditions) != 1 || !n.Spec.Unschedulable || len(n.Spec.Taints) != 1 || n.Labels["kubernetes.io/arch"] != "amd64" {
		t.Fatalf("node after the transform: %+v", n)
	}
	// A deletion tombstone passes through.
	if _, err := transform("not an object"); err != nil {
		t.Fatal(err)
	}
}
