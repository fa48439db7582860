package vmsim

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func TestPlanVMI(t *testing.T) {
	migrated := targetAt("node-b", corev1.PodRunning, t0)
	for _, tc := range []struct {
		name      string
		vmi       *v1.VirtualMachineInstance
		pods      []corev1.Pod
		createPod bool
		phase     v1.VirtualMachineInstancePhase // "" = no status write
		check     func(*testing.T, *v1.VirtualMachineInstanceStatus)
	}{
		{name: "new VMI gets a launcher pod", vmi: newVMI(""), createPod: true, phase: v1.VMIScheduling},
		{name: "pod created, cache behind: create again (AlreadyExists), no write", vmi: newVMI(v1.VMIScheduling), createPod: true},
		{name: "pod unscheduled", vmi: newVMI(""), pods: []corev1.Pod{pod("p", "u", "", corev1.PodPending, imageV1)}, phase: v1.VMIScheduling},
		{name: "pod bound", vmi: newVMI(v1.VMIScheduling), pods: []corev1.Pod{pod("p", "u", "node-a", corev1.PodPending, imageV1)}, phase: v1.VMIScheduled,
			check: func(t *testing.T, st *v1.VirtualMachineInstanceStatus) {
				if st.NodeName != "node-a" {
					t.Errorf("nodeName %q", st.NodeName)
				}
			}},
		{name: "pod Running", vmi: newVMI(v1.VMIScheduled), pods: []corev1.Pod{sourcePod}, phase: v1.VMIRunning,
			check: func(t *testing.T, st *v1.VirtualMachineInstanceStatus) {
				if st.NodeName != "node-a" || st.LauncherContainerImageVersion != imageV1 || len(st.ActivePods) != 1 || st.ActivePods["source-uid"] != "node-a" {
					t.Errorf("status %+v", st)
				}
				wantCondition(t, st, v1.VMIConditionReady, corev1.ConditionTrue, "")
				wantCondition(t, st, v1.VMIConditionLiveMigratable, corev1.ConditionTrue, "")
			}},
		{name: "non-migratable", vmi: newVMI("", labelled(NonMigratableLabel, "true")), pods: []corev1.Pod{sourcePod}, phase: v1.VMIRunning,
			check: func(t *testing.T, st *v1.VirtualMachineInstanceStatus) {
				wantCondition(t, st, v1.VMIConditionLiveMigratable, corev1.ConditionFalse, NotMigratableReason)
			}},
		{name: "running and up to date: no write", vmi: newVMI("", runningOn(sourcePod)), pods: []corev1.Pod{sourcePod}},
		{name: "a migration's target pod does not start a VMI", vmi: newVMI(""), pods: []corev1.Pod{targetAt("", corev1.PodPending, t0)}, createPod: true, phase: v1.VMIScheduling},
		{name: "pod deleted before start: wait for its name", vmi: newVMI(v1.VMIScheduled), pods: []corev1.Pod{terminating(sourcePod)}},
		{name: "active pod evicted: Succeeded", vmi: newVMI("", runningOn(sourcePod)), pods: []corev1.Pod{terminating(sourcePod)}, phase: v1.VMISucceeded,
			check: func(t *testing.T, st *v1.VirtualMachineInstanceStatus) {
				wantCondition(t, st, v1.VMIConditionReady, corev1.ConditionFalse, "PodTerminating")
			}},
		{name: "active pod gone: Succeeded", vmi: newVMI("", runningOn(sourcePod)), phase: v1.VMISucceeded},
		{name: "migrated: the source pod going is fine", vmi: newVMI("", runningOn(migrated)), pods: []corev1.Pod{terminating(sourcePod), migrated}},
		{name: "migrating: the target pod changes nothing", vmi: newVMI("", runningOn(sourcePod), withMigrationState(started)), pods: []corev1.Pod{sourcePod, migrated}},
		{name: "Succeeded stays", vmi: newVMI(v1.VMISucceeded)},
		{name: "being deleted: nothing", vmi: newVMI("", func(v *v1.VirtualMachineInstance) { v.DeletionTimestamp = &now })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planVMI(vmiInput{VMI: tc.vmi, Pods: tc.pods, Image: imageV2, Now: now})
			if (p.CreatePod != nil) != tc.createPod {
				t.Fatalf("CreatePod %v, want %v", p.CreatePod, tc.createPod)
			}
			if p.CreatePod != nil {
				checkLauncherPod(t, p.CreatePod, tc.vmi, launcherPodName(tc.vmi.Name, tc.vmi.UID), imageV2)
			}
			switch {
			case tc.phase == "" && p.Status != nil:
				t.Fatalf("status write %+v, want none", p.Status)
			case tc.phase != "" && (p.Status == nil || p.Status.Phase != tc.phase):
				t.Fatalf("status %+v, want phase %s", p.Status, tc.phase)
			}
			if tc.check != nil {
				tc.check(t, p.Status)
			}
		})
	}
}

func checkLauncherPod(t *testing.T, p *corev1.Pod, vmi *v1.VirtualMachineInstance, name, image string) {
	t.Helper()
	if p.Name != name || p.Namespace != vmi.Namespace {
		t.Errorf("pod %s/%s", p.Namespace, p.Name)
	}
	want := map[string]string{AppLabel: LauncherApp, CreatedByLabel: string(vmi.UID), VMNameLabel: vmi.Name}
	for k, v := range want {
		if p.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, p.Labels[k], v)
		}
	}
	if len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Name != ComputeContainer || p.Spec.Containers[0].Image != image {
		t.Errorf("containers %+v", p.Spec.Containers)
	}
	if ref := p.OwnerReferences; len(ref) != 1 || ref[0].UID != vmi.UID || ref[0].Kind != "VirtualMachineInstance" || ref[0].Controller == nil || !*ref[0].Controller {
		t.Errorf("owner references %+v", ref)
	}
	if p.Spec.NodeSelector[kwokNodeLabel] != kwokNodeLabelValue {
		t.Errorf("node selector %v", p.Spec.NodeSelector)
	}
}

func wantCondition(t *testing.T, st *v1.VirtualMachineInstanceStatus, ct v1.VirtualMachineInstanceConditionType, status corev1.ConditionStatus, reason string) {
	t.Helper()
	for _, c := range st.Conditions {
		if c.Type == ct {
			if c.Status != status || c.Reason != reason {
				t.Errorf("condition %s: %s %q, want %s %q", ct, c.Status, c.Reason, status, reason)
			}
			return
		}
	}
	t.Errorf("no condition %s in %+v", ct, st.Conditions)
}

func TestLauncherPodName(t *testing.T) {
	a, b := launcherPodName("vm", "uid-1"), launcherPodName("vm", "uid-2")
	if a != launcherPodName("vm", "uid-1") {
		t.Error("not deterministic")
	}
	if a == b {
		t.Errorf("same name %s for two UIDs", a)
	}
	if len(a) != len("virt-launcher-vm-")+5 {
		t.Errorf("name %q: want virt-launcher-vm- and 5 characters", a)
	}
	long := launcherPodName(string(make([]byte, 100)), types.UID("u"))
	if len(long) != 63 {
		t.Errorf("long VMI name: pod name of %d characters, want 63", len(long))
	}
}
