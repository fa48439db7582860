package rollout

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	apiv1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// migrationSim plays virt-controller and virt-handler for the probe's
// migrations on a simulated clock: a migration is Scheduling for a tick,
// then Running, and ends after runFor; one into a node in refuse fails,
// leaving the VMI on its source. Off goes to the first other node.
type migrationSim struct {
	vmis       []apiv1.VirtualMachineInstance
	migrations []apiv1.VirtualMachineInstanceMigration
	started    map[string]time.Time
	refuse     map[string]bool
	runFor     time.Duration
	nodes      []string
}

func (s *migrationSim) create(m *apiv1.VirtualMachineInstanceMigration, now time.Time) error {
	for _, have := range s.migrations {
		if have.Namespace == m.Namespace && have.Name == m.Name {
			return fmt.Errorf("migrations %q already exists", m.Name)
		}
	}
	c := *m.DeepCopy()
	c.UID, c.CreationTimestamp = types.UID("uid-"+m.Name), metav1.NewTime(now.Truncate(time.Second))
	s.migrations = append(s.migrations, c)
	s.started[m.Name] = now
	return nil
}

func (s *migrationSim) abort(name types.NamespacedName) {
	s.migrations = slices.DeleteFunc(s.migrations, func(m apiv1.VirtualMachineInstanceMigration) bool {
		return m.Namespace == name.Namespace && m.Name == name.Name && !workloadupdate.IsFinished(&m)
	})
}

func (s *migrationSim) tick(now time.Time) {
	for i := range s.migrations {
		m := &s.migrations[i]
		if workloadupdate.IsFinished(m) {
			continue
		}
		vmi := s.vmi(m.Spec.VMIName)
		switch {
		case m.Status.Phase == "":
			m.Status.Phase = apiv1.MigrationScheduling
		case m.Status.Phase == apiv1.MigrationScheduling:
			target := m.Spec.AddedNodeSelector[corev1.LabelHostname]
			for _, n := range s.nodes {
				if target == "" && n != vmi.Status.NodeName {
					target = n
				}
			}
			vmi.Status.MigrationState = &apiv1.VirtualMachineInstanceMigrationState{MigrationUID: m.UID, SourceNode: vmi.Status.NodeName, TargetNode: target}
			m.Status.Phase = apiv1.MigrationRunning
		case now.Sub(s.started[m.Name]) >= s.runFor:
			ms := vmi.Status.MigrationState
			ms.Completed = true
			m.Status.Phase = apiv1.MigrationSucceeded
			if s.refuse[ms.TargetNode] {
				ms.Failed, ms.FailureReason = true, "virt-handler on "+ms.TargetNode+" refused the migration"
				m.Status.Phase = apiv1.MigrationFailed
			} else {
				vmi.Status.NodeName = ms.TargetNode
			}
		}
	}
}

func (s *migrationSim) vmi(name string) *apiv1.VirtualMachineInstance {
	for i := range s.vmis {
		if s.vmis[i].Name == name {
			return &s.vmis[i]
		}
	}
	return nil
}

// unfinishedProbes counts the probe's unfinished migrations, and says
// whether one touches a node another unfinished migration touches.
func (s *migrationSim) unfinishedProbes(others []Migration) (n int, shared string) {
	for i := range s.migrations {
		m := &s.migrations[i]
		if !workloadupdate.IsHandlerProbe(m) || workloadupdate.IsFinished(m) {
			continue
		}
		n++
		if st := s.vmi(m.Spec.VMIName).Status.MigrationState; st != nil {
			for _, o := range others {
				for _, node := range []string{st.SourceNode, st.TargetNode} {
					if node == o.SourceNode || node == o.TargetNode {
						shared = m.Name + " and " + o.String() + " on " + node
					}
				}
			}
		}
	}
	return n, shared
}

// A whole probe through Plan, a tick a second, its state through status:
// it waits while someone else's migration runs on the probe VMI's node,
// never runs two migrations at once nor beside another on a node, and ends
// with the VMI on the canary node and the rollout widened; the same probe
// into a canary that refuses migrations fails, rolls back, and leaves the
// VMI running where it was.
func TestSequenceMigrationProbe(t *testing.T) {
	for _, tc := range []struct {
		name   string
		refuse bool
		at     string // the node the probe's VMI starts on
		moves  int
	}{
		{"a healthy canary, the VMI elsewhere", false, "node-1", 3},
		{"a healthy canary, the VMI one of the canary node's watched VMIs", false, "node-0", 2},
		{"a canary that refuses migrations", true, "node-1", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := &migrationSim{vmis: []apiv1.VirtualMachineInstance{vmi("probe-vm", tc.at), vmi("other", "node-0", unlabelled)},
				started: map[string]time.Time{}, refuse: map[string]bool{"node-0": tc.refuse}, runFor: 3 * time.Second,
				nodes: []string{"node-0", "node-1", "node-2"}}
			users := []Migration{{Namespace: "default", Name: "users", SourceNode: "node-1", TargetNode: "node-2"}}
			p := withChecks(DataPlaneChecks{CanaryVMIs: true, CanaryPod: true, Probe: probeOn("app=probe").Probe})
			obs := canaryObs(PhaseVerifying, Checks{}, &DataPlane{})
			if tc.at == "node-1" {
				users[0].SourceNode = "node-1"
			} else {
				users[0].SourceNode, users[0].TargetNode = "node-0", "node-2"
			}
			var d Decision
			for sec := 100; sec < 400; sec++ {
				now := at(sec)
				if sec == 106 {
					users = nil // someone else's migration on node-1 ends
				}
				obs.Now, obs.Migrations = now, users
				obs.DataPlane = &DataPlane{VMIs: slices.Clone(sim.vmis), Migrations: slices.Clone(sim.migrations), Nodes: threeNodes(),
					Limits: workloadupdate.Settings{PerNode: 1}}
				var err error
				if d, err = Plan(obs, p); err != nil {
					t.Fatal(err)
				}
				if d.CreateMigration != nil {
					if sec < 106 {
						t.Fatalf("at %ds the probe created %s while migration default/users ran on its VMI's node", sec, d.CreateMigration.Name)
					}
					if err := sim.create(d.CreateMigration, now); err != nil {
						t.Fatalf("at %ds: %v", sec, err)
					}
				}
				for _, a := range d.AbortMigrations {
					sim.abort(a)
				}
				if n, shared := sim.unfinishedProbes(users); n > 1 || shared != "" {
					t.Fatalf("at %ds: %d probe migrations unfinished, shared node: %q", sec, n, shared)
				}
				if d.Phase != PhaseVerifying {
					break
				}
				obs.Previous = StateFromStatus(d.Status, d.State.TargetID)
				sim.tick(now)
			}
			vm := sim.vmi("probe-vm")
			r := d.State.Checks.result(CheckMigrationProbe)
			if tc.refuse {
				if d.Phase != PhaseFailed || !d.Rollback || r.State != CheckFailed || vm.Status.Phase != apiv1.VMIRunning || vm.Status.NodeName != tc.at ||
					len(sim.migrations) != tc.moves {
					t.Fatalf("phase %s, rollback %v, probe %+v, VMI on %s (%s)", d.Phase, d.Rollback, r, vm.Status.NodeName, vm.Status.Phase)
				}
				t.Logf("failed: %s", d.State.Message)
				return
			}
			if d.Phase != PhaseIncreasing || r.State != CheckPassed || vm.Status.NodeName != "node-0" || len(sim.migrations) != tc.moves ||
				(tc.at == "node-0") != (len(d.State.Checks.Watched) == 2) {
				t.Fatalf("phase %s, probe %+v, VMI on %s, %d migrations (%s)", d.Phase, r, vm.Status.NodeName, len(sim.migrations), d.State.Message)
			}
			for _, c := range d.State.Checks.Results {
				if c.State != CheckPassed {
					t.Errorf("check %s %s, want Passed", c.Name, c.State)
				}
			}
			t.Logf("passed: %s", r.Message)
		})
	}
}
