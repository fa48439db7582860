package operator

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/workloadupdate"
)

func TestCacheTransform(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
	transform := cacheTransform()
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", ManagedFields: managed},
		Spec:   runtime.RawExtension{Raw: []byte(`{"domain":{"devices":{"disks":[{"name":"root"}]}}}`)},
		Status: v1.VirtualMachineInstanceStatus{Phase: v1.VMIRunning, NodeName: "n1"}}
	out, err := transform(vmi)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*v1.VirtualMachineInstance)
	if got.ManagedFields != nil || got.Spec.Raw != nil || got.Status.NodeName != "n1" || got.Name != "vm" {
		t.Fatalf("VMI after the transform: %+v", got)
	}
	// Of the spec, the placement stays: the updater checks migration targets.
	placed := &v1.VirtualMachineInstance{Spec: runtime.RawExtension{Raw: []byte(
		`{"domain":{"devices":{}},"nodeSelector":{"gpu":"yes"},"tolerations":[{"key":"k","operator":"Exists"}]}`)}}
	out, err = transform(placed)
	if err != nil {
		t.Fatal(err)
	}
	if raw := string(out.(*v1.VirtualMachineInstance).Spec.Raw); raw != `{"nodeSelector":{"gpu":"yes"},"tolerations":[{"key":"k","operator":"Exists"}]}` {
		t.Fatalf("VMI spec after the transform: %s, want its node selector and tolerations only", raw)
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: managed, Labels: map[string]string{"kubevirt.io": "virt-handler"}},
		Spec: corev1.PodSpec{NodeName: "n1", ServiceAccountName: "kubevirt-handler",
			Volumes:        []corev1.Volume{{Name: "libvirt-runtimes"}},
			InitContainers: []corev1.Container{{Name: "init", Image: "virt-launcher:v1", Command: []string{"/bin/sh"}}},
			Containers: []corev1.Container{{Name: "virt-handler", Image: "virt-handler:v1", Args: []string{"--port", "8443"},
				Env: []corev1.EnvVar{{Name: "NODE_NAME"}}, VolumeMounts: []corev1.VolumeMount{{Name: "libvirt-runtimes"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "virt-handler", RestartCount: 2}}}}
	out, err = transform(pod)
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

func TestCacheTransformTrimsVMIsAndFinishedMigrations(t *testing.T) {
	transform := cacheTransform()
	at := metav1.Now()
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm",
		Labels: map[string]string{workloadupdate.ChoiceKey: "Evict", "app": "db"},
		Annotations: map[string]string{workloadupdate.TestAbortionAnnotation: "", workloadupdate.ChoiceKey: "None",
			"kubectl.kubernetes.io/last-applied-configuration": `{"spec":{}}`, "kubevirt.io/latest-observed-api-version": "v1"}},
		Status: v1.VirtualMachineInstanceStatus{Conditions: []v1.VirtualMachineInstanceCondition{{Type: v1.VMIConditionLiveMigratable,
			Status: corev1.ConditionFalse, Reason: "DisksNotLiveMigratable", Message: "a long explanation", LastTransitionTime: at, LastProbeTime: at}}}}
	out, err := transform(vmi)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*v1.VirtualMachineInstance)
	wantAnnotations := map[string]string{workloadupdate.TestAbortionAnnotation: "", workloadupdate.ChoiceKey: "None"}
	if !maps.Equal(got.Annotations, wantAnnotations) || len(got.Labels) != 2 {
		t.Errorf("VMI labels %v annotations %v, want every label and only %v", got.Labels, got.Annotations, wantAnnotations)
	}
	wantCondition := v1.VirtualMachineInstanceCondition{Type: v1.VMIConditionLiveMigratable, Status: corev1.ConditionFalse, LastTransitionTime: at}
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0] != wantCondition {
		t.Errorf("VMI conditions %+v, want %+v", got.Status.Conditions, wantCondition)
	}
	if out, _ := transform(&v1.VirtualMachineInstance{}); out.(*v1.VirtualMachineInstance).Annotations != nil {
		t.Error("a VMI without annotations got a map")
	}

	state := &v1.VirtualMachineInstanceMigrationState{StartTimestamp: &at, EndTimestamp: &at, SourceNode: "n1", TargetNode: "n2",
		TargetPod: "virt-launcher-vm-x", Completed: true, Failed: true, MigrationUID: "m-uid"}
	migration := func(phase v1.VirtualMachineInstanceMigrationPhase) *v1.VirtualMachineInstanceMigration {
		return &v1.VirtualMachineInstanceMigration{
			ObjectMeta: metav1.ObjectMeta{Name: "m", Annotations: map[string]string{workloadupdate.WorkloadUpdateMigrationAnnotation: ""}},
			Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: "vm"},
			Status: v1.VirtualMachineInstanceMigrationStatus{Phase: phase, MigrationState: state.DeepCopy(),
				PhaseTransitionTimestamps: []v1.MigrationPhaseTransitionTimestamp{{Phase: v1.MigrationRunning, PhaseTransitionTimestamp: at},
					{Phase: v1.MigrationFailed, PhaseTransitionTimestamp: at}}}}
	}
	out, err = transform(migration(v1.MigrationFailed))
	if err != nil {
		t.Fatal(err)
	}
	failed := out.(*v1.VirtualMachineInstanceMigration)
	wantState := v1.VirtualMachineInstanceMigrationState{EndTimestamp: &at, Completed: true, Failed: true, MigrationUID: "m-uid"}
	if !workloadupdate.IsWorkloadUpdate(failed) || failed.Spec.VMIName != "vm" || failed.Status.Phase != v1.MigrationFailed ||
		!equality.Semantic.DeepEqual(*failed.Status.MigrationState, wantState) || len(failed.Status.PhaseTransitionTimestamps) != 1 ||
		failed.Status.PhaseTransitionTimestamps[0].Phase != v1.MigrationFailed {
		t.Errorf("finished migration after the transform: %+v", failed)
	}
	out, _ = transform(migration(v1.MigrationRunning))
	if running := out.(*v1.VirtualMachineInstanceMigration); running.Status.MigrationState.SourceNode != "n1" || len(running.Status.PhaseTransitionTimestamps) != 2 {
		t.Errorf("an unfinished migration was trimmed: %+v", running.Status)
	}
}
