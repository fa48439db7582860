package vmsim

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

var sandboxNodes = []string{"node-a", "node-b", "node-c"}

func TestPlanPodlessVMI(t *testing.T) {
	p := planPodlessVMI(podlessVMIInput{VMI: newVMI("", annotated(NodeAnnotation, "node-c")), Nodes: sandboxNodes, Image: imageV2, Now: now})
	st := p.Status
	if p.CreatePod != nil || st == nil || st.Phase != v1.VMIRunning || st.NodeName != "node-c" || st.LauncherContainerImageVersion != imageV2 ||
		st.ActivePods[podlessPodUID(vmiUID)] != "node-c" {
		t.Fatalf("new VMI: plan %+v status %+v, want Running on node-c with no pod", p, st)
	}
	if p := planPodlessVMI(podlessVMIInput{VMI: newVMI(""), Nodes: sandboxNodes, Image: imageV2, Now: now}); p.Status == nil || p.Status.NodeName == "" {
		t.Errorf("no NodeAnnotation: %+v, want a picked node", p.Status)
	}
	if p := planPodlessVMI(podlessVMIInput{VMI: newVMI(""), Image: imageV2, Now: now}); p.Status != nil {
		t.Errorf("no nodes known yet: %+v, want no write", p.Status)
	}
	running := newVMI("", func(vmi *v1.VirtualMachineInstance) { vmi.Status = *st })
	if p := planPodlessVMI(podlessVMIInput{VMI: running, Nodes: sandboxNodes, Image: imageV2, Now: now}); p.Status != nil {
		t.Errorf("running: %+v, want no write", p.Status)
	}
	migrating := running.DeepCopy()
	migrating.Status.MigrationState = started.DeepCopy()
	if p := planPodlessVMI(podlessVMIInput{VMI: migrating, Migrations: []v1.VirtualMachineInstanceMigration{*newMigration(v1.MigrationRunning)}, Nodes: sandboxNodes}); p.Status != nil {
		t.Errorf("migrating: %+v, want no write", p.Status)
	}
	if p := planPodlessVMI(podlessVMIInput{VMI: migrating, Nodes: sandboxNodes}); p.Status == nil || p.Status.MigrationState != nil {
		t.Errorf("its migration deleted: %+v, want the migration state cleared", p.Status)
	}
}

// A podless migration: Running with the VMI's migration state at once, then at
// the end the VMI on the target node with the current image, then Succeeded.
func TestPlanPodlessMigration(t *testing.T) {
	source := newVMI("", func(vmi *v1.VirtualMachineInstance) {
		vmi.Status = *podlessRunning(vmi, "node-a", podlessPodUID(vmiUID), imageV1, now)
	})
	start := planPodlessMigration(migrationInput{Migration: newMigration(""), VMI: source, Image: imageV2, Duration: duration, Now: t0.Add(300 * time.Millisecond)}, sandboxNodes)
	ms := start.VMIStatus.MigrationState
	if start.CreatePod != nil || start.Status == nil || start.Status.Phase != v1.MigrationRunning || ms == nil ||
		ms.SourceNode != "node-a" || ms.TargetNode == "node-a" || ms.TargetNode == "" || !ms.StartTimestamp.Equal(ptrTime(metav1.NewTime(t0.Add(time.Second)))) {
		t.Fatalf("start: plan %+v, migration state %+v; want Running, a target other than node-a, the start rounded up", start, ms)
	}
	migrating := source.DeepCopy()
	migrating.Status = *start.VMIStatus
	m := newMigration(v1.MigrationRunning)
	if p := planPodlessMigration(migrationInput{Migration: m, VMI: migrating, Image: imageV2, Duration: duration, Now: t0.Add(1500 * time.Millisecond)}, sandboxNodes); p.RequeueAfter != 500*time.Millisecond || p.VMIStatus != nil {
		t.Errorf("before the end: %+v, want a requeue after 500ms", p)
	}
	held := annotatedMigration(m.DeepCopy(), HoldMigrationAnnotation, "true")
	if p := planPodlessMigration(migrationInput{Migration: held, VMI: migrating, Image: imageV2, Duration: duration, Now: t0.Add(time.Hour)}, sandboxNodes); p.VMIStatus != nil || p.Status != nil || p.RequeueAfter != 0 {
		t.Errorf("held past its end: %+v, want nothing until released", p)
	}
	end := planPodlessMigration(migrationInput{Migration: m, VMI: migrating, Image: imageV2, Duration: duration, Now: t0.Add(2 * time.Second)}, sandboxNodes)
	st := end.VMIStatus
	if st == nil || st.NodeName != ms.TargetNode || st.LauncherContainerImageVersion != imageV2 || !st.MigrationState.Completed ||
		st.ActivePods[podlessPodUID(migUID)] != ms.TargetNode || len(st.ActivePods) != 1 || end.Status.Phase != v1.MigrationSucceeded {
		t.Fatalf("end: VMI %+v migration %+v", st, end.Status)
	}
	migrating.Status = *st
	if p := planPodlessMigration(migrationInput{Migration: m, VMI: migrating, Image: imageV2, Duration: duration, Now: t0.Add(3 * time.Second)}, sandboxNodes); p.VMIStatus != nil || p.Status == nil || p.Status.Phase != v1.MigrationSucceeded {
		t.Errorf("the VMI knows, the migration not yet: %+v", p)
	}

	failing := migrating.DeepCopy()
	failing.Status = *start.VMIStatus
	failing.Annotations = map[string]string{FailMigrationsAnnotation: "1"}
	p := planPodlessMigration(migrationInput{Migration: m, VMI: failing, Image: imageV2, Duration: duration, Now: t0.Add(2 * time.Second)}, sandboxNodes)
	if !p.ConsumeFailure || p.VMIStatus == nil || !p.VMIStatus.MigrationState.Failed || p.VMIStatus.NodeName != "node-a" || p.Status.Phase != v1.MigrationFailed {
		t.Errorf("asked to fail: %+v", p)
	}
	if p := planPodlessMigration(migrationInput{Migration: newMigration(""), VMI: newVMI("", labelled(NonMigratableLabel, "true"), func(vmi *v1.VirtualMachineInstance) { vmi.Status.Phase = v1.VMIRunning }), Now: t0}, sandboxNodes); p.Status == nil || p.Status.Phase != v1.MigrationFailed {
		t.Errorf("non-migratable: %+v, want Failed", p)
	}
}

// A migration annotated with a target node moves its VMI there, unless that
// is its source or no sandbox node: then the target is picked as for any.
func TestMigrationTarget(t *testing.T) {
	to := func(node string) *v1.VirtualMachineInstanceMigration {
		m := newMigration("")
		m.Annotations = map[string]string{TargetNodeAnnotation: node}
		return m
	}
	if got := migrationTarget(to("node-c"), sandboxNodes, "node-a"); got != "node-c" {
		t.Errorf("annotated node-c: target %q", got)
	}
	for _, bad := range []string{"node-a", "node-z", ""} {
		got := migrationTarget(to(bad), sandboxNodes, "node-a")
		if got == "node-a" || got == "" || got != pickNode(sandboxNodes, migUID, "node-a") {
			t.Errorf("annotated %q: target %q, want pickNode's other node", bad, got)
		}
	}
	source := newVMI("", func(vmi *v1.VirtualMachineInstance) {
		vmi.Status = *podlessRunning(vmi, "node-a", podlessPodUID(vmiUID), imageV1, now)
	})
	start := planPodlessMigration(migrationInput{Migration: to("node-b"), VMI: source, Image: imageV2, Duration: duration, Now: t0}, sandboxNodes)
	if ms := start.VMIStatus.MigrationState; ms == nil || ms.TargetNode != "node-b" {
		t.Errorf("the migration's state %+v, want target node-b", ms)
	}
}

func TestPickNode(t *testing.T) {
	counts := map[string]int{}
	for i := range 300 {
		n := pickNode(sandboxNodes, types.UID(rune('a'+i%26))+types.UID(string(rune(i))), "node-b")
		if n == "node-b" {
			t.Fatal("picked the node to avoid")
		}
		counts[n]++
	}
	if counts["node-a"] == 0 || counts["node-c"] == 0 {
		t.Errorf("picks %v, want both other nodes", counts)
	}
	if got := pickNode([]string{"node-a"}, "u", "node-a"); got != "node-a" {
		t.Errorf("one node: %q, want it even if to avoid", got)
	}
	if got := pickNode(nil, "u", ""); got != "" {
		t.Errorf("no nodes: %q", got)
	}
}
