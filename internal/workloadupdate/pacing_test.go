package workloadupdate

import (
	"fmt"
	"testing"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func onNode(node string) vmiOpt {
	return func(v *v1.VirtualMachineInstance) { v.Status.NodeName = node }
}

// packed puts counts[i] migratable outdated VMIs on node-i.
func packed(counts ...int) []v1.VirtualMachineInstance {
	var out []v1.VirtualMachineInstance
	for i, n := range counts {
		out = append(out, many(fmt.Sprintf("n%d", i), n, oldImage, migratable, onNode(fmt.Sprintf("node-%d", i)))...)
	}
	return out
}

func perNode(p Plan) map[string]int {
	out := map[string]int{}
	for _, r := range p.Migrate {
		out[r.VMI.Node]++
	}
	return out
}

func TestClusterCap(t *testing.T) {
	cases := []struct {
		name  string
		s     Settings
		nodes int
		want  int
	}{
		{"per node: one slot per node running outdated VMIs", Settings{PerNode: 1}, 20, 20},
		{"per node 2 doubles it", Settings{PerNode: 2}, 20, 40},
		{"parallelMigrationsPerCluster bounds the default", Settings{PerNode: 1, ParallelMigrations: 8}, 20, 8},
		{"explicit cluster cap", Settings{PerNode: 1, PerCluster: 3}, 20, 3},
		{"explicit cap bounded too", Settings{PerNode: 1, PerCluster: 30, ParallelMigrations: 8}, 20, 8},
		{"parallelMigrationsPerCluster 0 stops migrations", Settings{PerNode: 1, ParallelMigrations: -1}, 20, 0},
		{"upstream's: no per-node cap, 5", Settings{}, 20, 5},
		{"no outdated VMIs, no slots", Settings{PerNode: 1}, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := clusterCap(c.s, c.nodes); got != c.want {
				t.Fatalf("clusterCap = %d, want %d", got, c.want)
			}
		})
	}
}

func TestPacingByCapacity(t *testing.T) {
	t.Run("one per node, every node at once, uneven packing", func(t *testing.T) {
		in := inputs(packed(50, 3, 1, 10), nil, both)
		in.PerNode = 1
		p := PlanUpdate(in)
		got := perNode(p)
		if len(p.Migrate) != 4 || len(got) != 4 {
			t.Fatalf("want one from each of 4 nodes, got %v", got)
		}
		checkInvariants(t, in, p)
	})
	t.Run("a node already sending is skipped", func(t *testing.T) {
		vmis := packed(5, 5)
		busy := newMig("m0", vmis[0].Name, v1.MigrationRunning, true)
		in := inputs(vmis, []v1.VirtualMachineInstanceMigration{busy}, both)
		in.PerNode = 1
		p := PlanUpdate(in)
		if got := perNode(p); len(p.Migrate) != 1 || got["node-1"] != 1 {
			t.Fatalf("want only node-1, got %v", got)
		}
		checkInvariants(t, in, p)
	})
	t.Run("the migration state's source node counts, not where the VMI now is", func(t *testing.T) {
		vmis := packed(2, 2)
		m := newMig("m0", "elsewhere", v1.MigrationRunning, false)
		m.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{SourceNode: "node-0"}
		in := inputs(vmis, []v1.VirtualMachineInstanceMigration{m}, both)
		in.PerNode = 1
		if got := perNode(PlanUpdate(in)); got["node-0"] != 0 || got["node-1"] != 1 {
			t.Fatalf("node-0 is busy: %v", got)
		}
	})
	t.Run("a small cluster cap goes to the busiest nodes first", func(t *testing.T) {
		in := inputs(packed(1, 9, 4), nil, both)
		in.PerNode, in.PerCluster = 1, 2
		if got := perNode(PlanUpdate(in)); got["node-1"] != 1 || got["node-2"] != 1 {
			t.Fatalf("want node-1 and node-2, got %v", got)
		}
	})
	t.Run("per node 3 with a cap of 5 spreads 3+2, not 3+... in order", func(t *testing.T) {
		in := inputs(packed(10, 10), nil, both)
		in.PerNode, in.PerCluster = 3, 5
		got := perNode(PlanUpdate(in))
		if got["node-0"]+got["node-1"] != 5 || got["node-0"] > 3 || got["node-1"] > 3 {
			t.Fatalf("got %v", got)
		}
	})
}

// The drain is bounded by the busiest node: with one migration per node at a
// time, 400 VMIs on 20 nodes with one node holding 40 take 40 rounds.
func TestPacedDrainIsBoundedByTheBusiestNode(t *testing.T) {
	counts := make([]int, 20)
	for i := range counts {
		counts[i] = 360 / 19
	}
	counts[0] = 40
	counts[19] += 360 - 19*(360/19)
	vmis := packed(counts...)
	s := Settings{Methods: both, PerNode: 1}
	const migTicks = 4
	w := newWorld(t, vmis, s, migTicks)
	steps := w.run(10000)
	// A migration holds its node's slot from its creation until a reconcile sees
	// it finished: migTicks+1 steps.
	bound := 40 * (migTicks + 1)
	t.Logf("%d steps, bound %d (busiest node), ratio %.3f", steps, bound, float64(steps)/float64(bound))
	if float64(steps) > 1.05*float64(bound) {
		t.Fatalf("drain took %d steps; the busiest node bounds it at %d", steps, bound)
	}
	if w.maxInFlight > 20 {
		t.Fatalf("%d migrations at once, cap 20", w.maxInFlight)
	}
}
