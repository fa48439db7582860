package workloadupdate

import (
	goruntime "runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// A VMI as virt-controller writes it: labels, annotations, a whole domain,
// every condition with its messages, two launcher pods.
func fullVMI() v1.VirtualMachineInstance {
	at := metav1.NewTime(t0)
	return v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vm-00042", UID: "6f1c0e3a-8a4b-4c7e-9d2e-0a1b2c3d4e5f",
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)), ResourceVersion: "123456",
			Labels:          map[string]string{"kubevirt.io/vm": "vm-00042", "kubevirt.io/nodeName": "node-7", ChoiceKey: "LiveMigrate"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"spec":{}}`, TestAbortionAnnotation: ""},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm-00042", UID: "owner"}}},
		Spec: runtime.RawExtension{Raw: []byte(`{"domain":{"cpu":{"cores":2},"devices":{"disks":[{"name":"root"}]}},` +
			`"nodeSelector":{"gpu":"yes"},"tolerations":[{"key":"k","operator":"Exists"}]}`)},
		Status: v1.VirtualMachineInstanceStatus{Phase: v1.VMIRunning, NodeName: "node-7", LauncherContainerImageVersion: "quay.io/kubevirt/virt-launcher:v1.8.4",
			EvacuationNodeName: "node-7",
			Conditions: []v1.VirtualMachineInstanceCondition{
				{Type: v1.VMIConditionReady, Status: corev1.ConditionTrue, Message: "ready", LastProbeTime: at},
				{Type: v1.VMIConditionLiveMigratable, Status: corev1.ConditionTrue, Reason: "r", Message: "a long explanation"},
				{Type: VMIConditionHotVCPUChange, Status: corev1.ConditionFalse},
				{Type: v1.VMIConditionVolumesChange, Status: corev1.ConditionTrue}},
			MigrationState: &v1.VirtualMachineInstanceMigrationState{StartTimestamp: &at, SourceNode: "node-6", TargetNode: "node-7",
				TargetPod: "virt-launcher-vm-00042-x", Completed: true, MigrationUID: "m-uid", FailureReason: "none"},
			ActivePods: map[types.UID]string{"pod-b": "node-7", "pod-a": "node-6"}},
	}
}

// The compact form keeps what the decisions read, and its API form gives the
// same compact form again: nothing the decisions read is lost either way.
func TestCompactVMI(t *testing.T) {
	full := fullVMI()
	c := CompactVMI(&full)
	want := &VMI{Namespace: ns, Name: "vm-00042", UID: full.UID, Created: t0.Add(-time.Hour).Unix(), Phase: v1.VMIRunning,
		Node: "node-7", Launcher: "quay.io/kubevirt/virt-launcher:v1.8.4", Evacuation: "node-7", Choice: "LiveMigrate",
		Flags: TestAbort | HasChoice | LiveMigratable | HotVCPUChange | VolumesChange,
		Migration: &MigrationState{UID: "m-uid", Source: "node-6", Target: "node-7", Started: t0.Unix(), Completed: true,
			TargetPod: "virt-launcher-vm-00042-x", FailureReason: "none"},
		Placement:  &Placement{NodeSelector: map[string]string{"gpu": "yes"}, Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}},
		ActivePods: []types.UID{"pod-a", "pod-b"}}
	if !equality.Semantic.DeepEqual(c, want) {
		t.Fatalf("compact form\n got %+v\nwant %+v", c, want)
	}
	deleting := full.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	deleting.Labels = nil
	deleting.Annotations = map[string]string{ChoiceKey: "bogus"}
	deleting.Spec = runtime.RawExtension{Raw: []byte(`{"nodeSelector":1}`)}
	for _, vmi := range []v1.VirtualMachineInstance{full, *deleting, newVMI("plain", oldImage)} {
		c := CompactVMI(&vmi)
		expanded := c.Expand()
		if again := CompactVMI(&expanded); !equality.Semantic.DeepEqual(again, c) {
			t.Errorf("%s: compact, expanded and compacted again\n got %+v\nwant %+v", vmi.Name, again, c)
		}
	}
	if c := CompactVMI(deleting); !c.Has(Deleting) || !c.Has(SpecUnreadable) || c.Choice != "bogus" || !c.Has(HasChoice) {
		t.Errorf("a deleting VMI with an unreadable spec and an annotated choice: %+v", c)
	}
}

func TestCompactMigration(t *testing.T) {
	at := metav1.NewTime(t0)
	failed := v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kubevirt-workload-update-abcde", UID: "m-uid", CreationTimestamp: metav1.NewTime(t0.Add(-time.Minute)),
			Annotations: map[string]string{WorkloadUpdateMigrationAnnotation: "", ProbeDirectionAnnotation: "away"},
			Labels:      map[string]string{HandlerProbeLabel: "rollout-1", VolumeUpdateMigrationLabel: "vm"}},
		Spec: v1.VirtualMachineInstanceMigrationSpec{VMIName: "vm"},
		Status: v1.VirtualMachineInstanceMigrationStatus{Phase: v1.MigrationFailed,
			MigrationState:            &v1.VirtualMachineInstanceMigrationState{EndTimestamp: &at, SourceNode: "a", Failed: true, FailureReason: "target died"},
			PhaseTransitionTimestamps: []v1.MigrationPhaseTransitionTimestamp{{Phase: v1.MigrationFailed, PhaseTransitionTimestamp: metav1.NewTime(t0.Add(time.Second))}}},
	}
	c := CompactMigration(&failed)
	if !c.WorkloadUpdate || !c.IsProbe || c.Probe != "rollout-1" || c.Direction != "away" || c.VMI != "vm" || !c.Finished() ||
		!time.Unix(0, c.FailedAt).Equal(failureTime(&failed)) || c.State.FailureReason != "target died" {
		t.Fatalf("compact form %+v", c)
	}
	for _, m := range []v1.VirtualMachineInstanceMigration{failed, newMig("m", "vm", v1.MigrationRunning, false), newMig("n", "vm", v1.MigrationSucceeded, true)} {
		c := CompactMigration(&m)
		expanded := c.Expand()
		if again := CompactMigration(&expanded); !equality.Semantic.DeepEqual(again, c) {
			t.Errorf("%s: compact, expanded and compacted again\n got %+v\nwant %+v", m.Name, again, c)
		}
	}
}

// BenchmarkCompactVMIHeld reports what a VMI costs in the compact form
// (held-bytes/VMI), and decoded (decoded-held-bytes/VMI: the API object as
// the informer decodes it, before the compact form replaces it).
func BenchmarkCompactVMIHeld(b *testing.B) {
	const n = 10000
	full := make([]v1.VirtualMachineInstance, n)
	for i := range full {
		full[i] = fullVMI()
		full[i].Name = full[i].Name + "-" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676%26))
		full[i].UID = types.UID(string(full[i].UID[:30]) + full[i].Name[len(full[i].Name)-3:] + "abc")
	}
	for b.Loop() {
		held := heldBytes(func() any {
			out := make([]*VMI, n)
			for i := range full {
				out[i] = CompactVMI(&full[i])
			}
			return out
		})
		b.ReportMetric(float64(held)/n, "held-bytes/VMI")
		decoded := heldBytes(func() any {
			out := make([]*v1.VirtualMachineInstance, n)
			for i := range full {
				out[i] = full[i].DeepCopy()
			}
			return out
		})
		b.ReportMetric(float64(decoded)/n, "decoded-held-bytes/VMI")
	}
}

// heldBytes is how much of the heap what make returns holds.
func heldBytes(make func() any) uint64 {
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	x := make()
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	goruntime.KeepAlive(x)
	return after.HeapAlloc - before.HeapAlloc
}
