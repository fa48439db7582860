package workloadupdate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func choice(value string) vmiOpt {
	return func(v *v1.VirtualMachineInstance) {
		if v.Labels == nil {
			v.Labels = map[string]string{}
		}
		v.Labels[ChoiceKey] = value
	}
}

// Movable refuses every VMI its owner or its state says must not be moved by
// someone else's migration; the reason names why.
func TestMovable(t *testing.T) {
	started := metav1.NewTime(t0)
	running := newMig("m", "a", v1.MigrationRunning, false)
	for _, tc := range []struct {
		name       string
		vmi        v1.VirtualMachineInstance
		unfinished []*v1.VirtualMachineInstanceMigration
		want       string // substring; "" for movable
	}{
		{"running and migratable", newVMI("a", curImage, migratable), nil, ""},
		{"a choice of LiveMigrate is movable", newVMI("a", curImage, migratable, choice("LiveMigrate")), nil, ""},
		{"not migratable", newVMI("a", curImage, cond(v1.VMIConditionLiveMigratable, corev1.ConditionFalse)), nil, "not live-migratable"},
		{"no LiveMigratable condition", newVMI("a", curImage), nil, "not live-migratable"},
		{"opted out: None", newVMI("a", curImage, migratable, choice("None")), nil, "opted out of migrations (kubevirt.io/workload-update-method=None)"},
		{"opted out: Evict", newVMI("a", curImage, migratable, choice("Evict")), nil, "opted out"},
		{"an invalid choice is left alone", newVMI("a", curImage, migratable, choice("Sometimes")), nil, "opted out"},
		{"not running", newVMI("a", curImage, migratable, phase(v1.VMIScheduling)), nil, "not running (phase Scheduling)"},
		{"being deleted", newVMI("a", curImage, migratable, func(v *v1.VirtualMachineInstance) { v.DeletionTimestamp = &started }), nil, "being deleted"},
		{"being evacuated", newVMI("a", curImage, migratable, func(v *v1.VirtualMachineInstance) { v.Status.EvacuationNodeName = "n1" }), nil, "evacuated from n1"},
		{"migrating by its state", newVMI("a", curImage, migratable, migState(v1.VirtualMachineInstanceMigrationState{StartTimestamp: &started})), nil, "already migrating"},
		{"an unfinished migration", newVMI("a", curImage, migratable), []*v1.VirtualMachineInstanceMigration{&running}, "already migrating"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Movable(&tc.vmi, tc.unfinished)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("Movable = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFitsNode(t *testing.T) {
	zoneB := `{"nodeSelector":{"zone":"b"}}`
	tolerates := `{"tolerations":[{"key":"gpu","operator":"Exists"}]}`
	for _, tc := range []struct {
		name string
		vmi  v1.VirtualMachineInstance
		node *corev1.Node
		want string
	}{
		{"any node fits a VMI without placement", newVMI("a", curImage), ptr(node("n1")), ""},
		{"its node selector matches", newVMI("a", curImage, spec(zoneB)), ptr(node("n1", nodeLabel("zone", "b"))), ""},
		{"its node selector does not match", newVMI("a", curImage, spec(zoneB)), ptr(node("n1", nodeLabel("zone", "a"))), "does not match its node selector"},
		{"an untolerated taint", newVMI("a", curImage), ptr(node("n1", tainted("gpu", corev1.TaintEffectNoSchedule))), "has a taint it does not tolerate"},
		{"a tolerated taint", newVMI("a", curImage, spec(tolerates)), ptr(node("n1", tainted("gpu", corev1.TaintEffectNoSchedule))), ""},
		{"a cordoned node", newVMI("a", curImage), ptr(node("n1", cordoned)), "cannot take a migration"},
		{"a node marked not schedulable by virt-handler", newVMI("a", curImage), ptr(node("n1", nodeLabel("kubevirt.io/schedulable", "false"))), "cannot take a migration"},
		{"a node that is not Ready", newVMI("a", curImage), ptr(node("n1", notReady)), "cannot take a migration"},
		{"no node", newVMI("a", curImage), nil, "gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FitsNode(&tc.vmi, tc.node)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("FitsNode = %q, want %q", got, tc.want)
			}
		})
	}
}

// Room counts migrations as the updater does (a running phase, or the
// updater's or the probe's own), by the node they leave, against the caps the
// admin set.
func TestRoom(t *testing.T) {
	vmis := []v1.VirtualMachineInstance{newVMI("a", curImage, on("n1")), newVMI("b", curImage, on("n1")), newVMI("c", curImage, on("n2"))}
	probe := newMig("p", "a", v1.MigrationPending, false)
	probe.Labels = map[string]string{HandlerProbeLabel: "k"}
	userPending := newMig("u", "b", v1.MigrationPending, false)
	elsewhere := newMig("e", "c", v1.MigrationRunning, false)
	for _, tc := range []struct {
		name string
		s    Settings
		migs []v1.VirtualMachineInstanceMigration
		node string
		want string
	}{
		{"nothing runs", Settings{PerNode: 1}, nil, "n1", ""},
		{"the probe's pending migration takes the node's slot", Settings{PerNode: 1}, []v1.VirtualMachineInstanceMigration{probe}, "n1",
			"node n1 already sends 1 migrations, the most spec.workloadUpdates.maxMigrationsPerNode allows (1)"},
		{"a pending migration of someone else's takes none", Settings{PerNode: 1}, []v1.VirtualMachineInstanceMigration{userPending}, "n1", ""},
		{"another node's migration leaves this node room", Settings{PerNode: 1}, []v1.VirtualMachineInstanceMigration{elsewhere}, "n1", ""},
		{"no per-node cap", Settings{}, []v1.VirtualMachineInstanceMigration{probe}, "n1", ""},
		{"the cluster cap the admin set", Settings{PerNode: 2, PerCluster: 1}, []v1.VirtualMachineInstanceMigration{elsewhere}, "n1",
			"1 migrations run in the cluster, the most spec.workloadUpdates.maxMigrationsPerCluster allows (1)"},
		{"parallelMigrationsPerCluster bounds it", Settings{PerCluster: 5, ParallelMigrations: 1}, []v1.VirtualMachineInstanceMigration{elsewhere}, "n1",
			"the most parallelMigrationsPerCluster allows (1)"},
		{"an explicit 0 allows none", Settings{ParallelMigrations: -1}, nil, "n1", "the most parallelMigrationsPerCluster allows (0)"},
		{"the updater's drain pace is not a cap on others", Settings{PerNode: 1}, []v1.VirtualMachineInstanceMigration{elsewhere}, "n1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.s.Room(IndexMigrations(tc.migs), vmis, tc.node)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("Room = %q, want %q", got, tc.want)
			}
		})
	}
}
