package workloadupdate

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func TestPlanReadsChange(t *testing.T) {
	base := v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", UID: "u1"},
		Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: "vm"},
		Status:     v1.VirtualMachineInstanceMigrationStatus{Phase: v1.MigrationScheduling},
	}
	with := func(change func(*v1.VirtualMachineInstanceMigration)) *v1.VirtualMachineInstanceMigration {
		m := base.DeepCopy()
		change(m)
		return m
	}
	phase := func(p v1.VirtualMachineInstanceMigrationPhase) *v1.VirtualMachineInstanceMigration {
		return with(func(m *v1.VirtualMachineInstanceMigration) { m.Status.Phase = p })
	}
	for _, c := range []struct {
		name string
		o, n *v1.VirtualMachineInstanceMigration
		want bool
	}{
		{"a running phase to the next", phase(v1.MigrationScheduling), phase(v1.MigrationRunning), false},
		{"progress only", &base, with(func(m *v1.VirtualMachineInstanceMigration) {
			m.Status.PhaseTransitionTimestamps = []v1.MigrationPhaseTransitionTimestamp{{Phase: v1.MigrationRunning}}
		}), false},
		{"pending to scheduling: takes a slot", phase(v1.MigrationPending), phase(v1.MigrationScheduling), true},
		{"a phase not set yet to pending", phase(""), phase(v1.MigrationPending), false},
		{"running to succeeded: frees a slot", phase(v1.MigrationRunning), phase(v1.MigrationSucceeded), true},
		{"pending to failed", phase(v1.MigrationPending), phase(v1.MigrationFailed), true},
		{"the source node set", &base, with(func(m *v1.VirtualMachineInstanceMigration) {
			m.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{SourceNode: "node-1"}
		}), true},
		{"the target node set: not read", &base, with(func(m *v1.VirtualMachineInstanceMigration) {
			m.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{TargetNode: "node-2"}
		}), false},
		{"marked as a workload update", &base, with(func(m *v1.VirtualMachineInstanceMigration) {
			m.Annotations = map[string]string{WorkloadUpdateMigrationAnnotation: ""}
		}), true},
		{"being deleted", &base, with(func(m *v1.VirtualMachineInstanceMigration) { m.DeletionTimestamp = &metav1.Time{} }), true},
		{"recreated under the same name", &base, with(func(m *v1.VirtualMachineInstanceMigration) { m.UID = "u2" }), true},
		{"another VMI", &base, with(func(m *v1.VirtualMachineInstanceMigration) { m.Spec.VMIName = "other" }), true},
		{"no status at all", &v1.VirtualMachineInstanceMigration{}, &v1.VirtualMachineInstanceMigration{}, false},
	} {
		if got := PlanReadsChange(CompactMigration(c.o), CompactMigration(c.n)); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
