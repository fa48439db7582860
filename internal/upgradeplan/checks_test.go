package upgradeplan

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
)

func handlerDaemonSet(image string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "virt-handler", Namespace: "kubevirt", UID: "ds-uid"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubevirt.io": "virt-handler"}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "virt-handler", Image: "quay.io/kubevirt/virt-handler:" + image}}}}},
	}
}

// The plan of an upgrade whose CR asks for data-plane checks shows each
// check under virt-handler: what it watches, the VMI the probe would move
// and how, its timeout, and its time in the estimate.
func TestMakeShowsTheDataPlaneChecks(t *testing.T) {
	oldCfg := &deployid.Config{Namespace: "kubevirt", Registry: "quay.io/kubevirt", KubeVirtVersion: "v1.8.4"}
	oldCfg.ID = oldCfg.ComputeID()
	newCfg := &deployid.Config{Namespace: "kubevirt", Registry: "quay.io/kubevirt", KubeVirtVersion: "v1.9.0"}
	newCfg.ID = newCfg.ComputeID()
	live := handlerDaemonSet("v1.8.4")
	var pods []corev1.Pod
	var nodes []corev1.Node
	for _, n := range []string{"node-0", "node-1"} {
		p := readyPod("virt-handler-"+n, "virt-handler", 3*time.Second)
		p.Spec.NodeName = n
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "virt-handler", UID: live.UID, Controller: ptr.To(true)}}
		pods = append(pods, p)
		nodes = append(nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{corev1.LabelHostname: n}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}})
	}
	vmi := v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "probe-vm", Namespace: "default", Labels: map[string]string{"app": "probe"}},
		Status: v1.VirtualMachineInstanceStatus{Phase: v1.VMIRunning, NodeName: "node-1",
			Conditions: []v1.VirtualMachineInstanceCondition{{Type: v1.VMIConditionLiveMigratable, Status: corev1.ConditionTrue}}}}
	newKV := &v1.KubeVirt{Spec: v1.KubeVirtSpec{HandlerRollout: &v1.HandlerRolloutPolicy{DataPlaneChecks: &v1.HandlerDataPlaneChecks{CanaryVMIs: true,
		MigrationProbe: &v1.HandlerMigrationProbe{VMISelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}},
			Timeout: &v1.Duration{Duration: 2 * time.Minute}}}}}}
	p := Make(Input{NewKubeVirt: newKV, CurrentConfig: oldCfg, NewConfig: newCfg,
		Steps: []apply.Step{{Name: apply.StepVirtHandler, Objects: []client.Object{handlerDaemonSet("v1.9.0")}}},
		Live:  map[apply.ObjectRef]client.Object{apply.RefOf(live): live}, Pods: pods, Nodes: nodes, VMIs: []v1.VirtualMachineInstance{vmi}})
	text := p.Text()
	for _, want := range []string{
		"canary on node-0, then the fast step",
		"data-plane checks after the bake, before the fast step (a failed one rolls back):",
		"CanaryVMIs      no VMI runs on node-0 now; those running there when the canary begins must stay Running through the bake and the checks",
		"MigrationProbe  moves VMI default/probe-vm onto node node-0, off it and back onto it (3 live migrations, one at a time), within 2m0s of the first",
		"virt-handler data-plane checks", "3 live migrations of the probe, a pod start each",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the plan lacks %q:\n%s", want, text)
		}
	}
}
