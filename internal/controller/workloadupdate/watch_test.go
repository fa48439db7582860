package workloadupdate

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// A VMI event joins a plan within vmiEventWindow only when it can change what
// the plan does; the rest wait as long as the counts are held.
func TestVMIWindow(t *testing.T) {
	vmi := outdatedVMI("vm", "a", nil)
	with := func(change func(*v1.VirtualMachineInstance)) *v1.VirtualMachineInstance {
		n := vmi.DeepCopy()
		change(n)
		return n
	}
	moved := with(func(n *v1.VirtualMachineInstance) { n.Status.NodeName = "b" })
	migrating := with(func(n *v1.VirtualMachineInstance) {
		n.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{TargetNode: "b"}
	})
	relaunched := with(func(n *v1.VirtualMachineInstance) {
		n.Status.LauncherContainerImageVersion = "quay.io/kubevirt/virt-launcher:v2"
	})
	rescheduled := with(func(n *v1.VirtualMachineInstance) { n.Status.Phase = v1.VMIScheduled })
	deleting := with(func(n *v1.VirtualMachineInstance) { n.DeletionTimestamp = &metav1.Time{Time: t0} })
	chosen := with(func(n *v1.VirtualMachineInstance) { n.Labels = map[string]string{core.ChoiceKey: "None"} })
	aborted := with(func(n *v1.VirtualMachineInstance) { n.Annotations = map[string]string{core.TestAbortionAnnotation: ""} })
	c := core.CompactVMI
	cases := []struct {
		name       string
		gateClosed bool
		outdated   int64
		old, new   *core.VMI
		want       time.Duration
	}{
		{"created", false, 3, nil, c(vmi), core.CountsInterval},
		{"deleted", false, 3, c(vmi), nil, core.CountsInterval},
		{"deleted while the CR is being deleted (gate closed)", true, 0, c(vmi), nil, core.CountsInterval},
		{"any update while the gate is closed", true, 3, c(vmi), c(relaunched), core.CountsInterval},
		{"moved while VMIs are outdated", false, 3, c(vmi), c(moved), vmiEventWindow},
		{"migrating while VMIs are outdated", false, 3, c(vmi), c(migrating), vmiEventWindow},
		{"moved while nothing is outdated", false, 0, c(vmi), c(moved), core.CountsInterval},
		{"migrating while nothing is outdated", false, 0, c(vmi), c(migrating), core.CountsInterval},
		{"a new launcher while nothing is outdated", false, 0, c(vmi), c(relaunched), vmiEventWindow},
		{"a phase change while nothing is outdated", false, 0, c(vmi), c(rescheduled), vmiEventWindow},
		{"a deletion starting while nothing is outdated", false, 0, c(vmi), c(deleting), vmiEventWindow},
		{"a choice while nothing is outdated", false, 0, c(vmi), c(chosen), vmiEventWindow},
		{"a test's abortion while nothing is outdated", false, 0, c(vmi), c(aborted), vmiEventWindow},
		{"a generic event", false, 3, c(vmi), c(vmi), vmiEventWindow},
	}
	for _, c := range cases {
		r := &Reconciler{}
		r.gateClosed.Store(c.gateClosed)
		r.outdated.Store(c.outdated)
		if got := r.vmiWindow(c.old, c.new); got != c.want {
			t.Errorf("%s: window %v, want %v", c.name, got, c.want)
		}
	}
}

// The window follows what the last plan counted: outdated VMIs make their
// moves prompt; once none are left, another actor's migrations wait.
func TestReconcileRemembersTheOutdatedCount(t *testing.T) {
	vmi := outdatedVMI("vm", "a", nil)
	moved := vmi.DeepCopy()
	moved.Status.NodeName = "b"
	h := newHarness(t, deployedKubeVirt(v1.KubeVirtSpec{WorkloadUpdates: ours}), vmi)
	h.reconcile()
	if got := h.r.vmiWindow(core.CompactVMI(vmi), core.CompactVMI(moved)); got != vmiEventWindow {
		t.Errorf("with an outdated VMI a move waits %v, want %v", got, vmiEventWindow)
	}
	current := vmi.DeepCopy()
	if err := h.c.Get(context.Background(), client.ObjectKeyFromObject(vmi), current); err != nil {
		t.Fatal(err)
	}
	current.Status.LauncherContainerImageVersion = "quay.io/kubevirt/virt-launcher:v2"
	if err := h.c.Update(context.Background(), current); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	if got := h.r.vmiWindow(core.CompactVMI(vmi), core.CompactVMI(moved)); got != core.CountsInterval {
		t.Errorf("with nothing outdated a move waits %v, want %v", got, core.CountsInterval)
	}
}

// A migration event joins a plan at once when it can change what starts next:
// a workload-update migration, or any while VMIs are outdated. Another
// actor's migrations while nothing is outdated wait as long as the counts.
func TestMigrationWindow(t *testing.T) {
	foreign := core.CompactMigration(&v1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "vms"}})
	ours := *foreign
	ours.WorkloadUpdate = true
	cases := []struct {
		name     string
		outdated int64
		old, new *core.Migration
		want     time.Duration
	}{
		{"ours created, nothing outdated", 0, nil, &ours, 0},
		{"ours deleted, nothing outdated", 0, &ours, nil, 0},
		{"another's created while VMIs are outdated", 2, nil, foreign, 0},
		{"another's updated while VMIs are outdated", 2, foreign, foreign, 0},
		{"another's created, nothing outdated", 0, nil, foreign, core.CountsInterval},
		{"another's updated, nothing outdated", 0, foreign, foreign, core.CountsInterval},
		{"another's deleted, nothing outdated", 0, foreign, nil, core.CountsInterval},
	}
	for _, c := range cases {
		r := &Reconciler{}
		r.outdated.Store(c.outdated)
		if got := r.migrationWindow(c.old, c.new); got != c.want {
			t.Errorf("%s: window %v, want %v", c.name, got, c.want)
		}
	}
}
