package workloadupdate

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// world is a toy cluster: VMIs, migrations that run for migTicks ticks, evictions
// that restart the VMI on the current launcher (runStrategy Always), and a KubeVirt
// CR annotation holding the last eviction batch. The planner keeps no memory.
type world struct {
	t         *testing.T
	now       time.Time
	tick      time.Duration
	migTicks  int
	vmis      []v1.VirtualMachineInstance
	migs      []v1.VirtualMachineInstanceMigration
	started   map[string]int // migration name -> tick it started running
	failFirst map[string]bool
	lastBatch time.Time
	settings  Settings
	step      int
	byName    map[string]int
	seq       int
	// observations
	succeeded   map[string]int
	failed      map[string]int
	evicted     map[string]int
	batches     []time.Time
	maxInFlight int
}

func newWorld(t *testing.T, vmis []v1.VirtualMachineInstance, s Settings, migTicks int) *world {
	return &world{t: t, now: t0, tick: 5 * time.Second, migTicks: migTicks, vmis: vmis, settings: s,
		started: map[string]int{}, failFirst: map[string]bool{},
		succeeded: map[string]int{}, failed: map[string]int{}, evicted: map[string]int{}}
}

func (w *world) vmi(name string) *v1.VirtualMachineInstance {
	if w.byName == nil {
		w.byName = map[string]int{}
		for i := range w.vmis {
			w.byName[w.vmis[i].Name] = i
		}
	}
	return &w.vmis[w.byName[name]]
}

// advance moves migrations along: Pending -> Running -> Succeeded/Failed.
func (w *world) advance() {
	for i := range w.migs {
		m := &w.migs[i]
		if IsFinished(m) {
			continue
		}
		vmi := w.vmi(m.Spec.VMIName)
		switch m.Status.Phase {
		case v1.MigrationPending:
			m.Status.Phase, w.started[m.Name] = v1.MigrationRunning, w.step
			ts := metav1.NewTime(w.now)
			vmi.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{StartTimestamp: &ts, MigrationUID: m.UID}
		case v1.MigrationRunning:
			if w.step-w.started[m.Name] < w.migTicks {
				continue
			}
			ts := metav1.NewTime(w.now)
			vmi.Status.MigrationState.EndTimestamp = &ts
			if w.failFirst[vmi.Name] {
				delete(w.failFirst, vmi.Name)
				m.Status.Phase, vmi.Status.MigrationState.Failed = v1.MigrationFailed, true
				w.failed[vmi.Name]++
				continue
			}
			m.Status.Phase, vmi.Status.MigrationState.Completed = v1.MigrationSucceeded, true
			vmi.Status.LauncherContainerImageVersion = curImage
			w.succeeded[vmi.Name]++
		}
	}
}

// reconcile plans once and applies the plan, checking the invariants.
func (w *world) reconcile() Plan {
	s := w.settings
	s.LastEvictionBatch = w.lastBatch
	in := Inputs{VMIs: CompactVMIs(w.vmis), Migrations: migsOf(w.migs...), TargetLauncherImage: curImage, Settings: s,
		Now: w.now, Seed: uint64(w.step)}
	p := PlanUpdate(in)
	checkInvariants(w.t, in, p)
	for _, r := range p.Migrate {
		m := r.Migration()
		w.seq++
		m.Name = fmt.Sprintf("%s%05d", m.GenerateName, w.seq)
		m.UID = types.UID("uid-" + m.Name)
		m.Status.Phase = v1.MigrationPending
		w.migs = append(w.migs, *m)
	}
	for _, v := range p.Evict {
		w.evicted[v.Name]++
		// runStrategy Always: a fresh VMI on the current launcher replaces it.
		w.vmi(v.Name).Status = v1.VirtualMachineInstanceStatus{Phase: v1.VMIRunning, LauncherContainerImageVersion: curImage}
	}
	if p.EvictionBatchAt != nil {
		w.lastBatch = *p.EvictionBatchAt
		w.batches = append(w.batches, *p.EvictionBatchAt)
	}
	inFlight := 0
	perVMI := map[string]int{}
	for i := range w.migs {
		if !IsFinished(&w.migs[i]) {
			inFlight++
			perVMI[w.migs[i].Spec.VMIName]++
			if perVMI[w.migs[i].Spec.VMIName] > 1 {
				w.t.Fatalf("step %d: two unfinished migrations for %s", w.step, w.migs[i].Spec.VMIName)
			}
		}
	}
	if inFlight > w.maxInFlight {
		w.maxInFlight = inFlight
	}
	return p
}

// run steps until nothing is outdated and nothing in flight; it returns the steps.
func (w *world) run(maxSteps int) int {
	for ; w.step < maxSteps; w.step++ {
		w.advance()
		p := w.reconcile()
		if p.Outdated == 0 && p.InFlight == 0 {
			return w.step
		}
		w.now = w.now.Add(w.tick)
	}
	w.t.Fatalf("outdated never reached 0 in %d steps", maxSteps)
	return 0
}

func TestSimulation200VMIs(t *testing.T) {
	vmis := append(many("live", 150, oldImage, migratable), many("stuck", 50, oldImage)...)
	w := newWorld(t, vmis, Settings{Methods: both}, 4)
	w.failFirst["live-007"], w.failFirst["live-100"] = true, true
	steps := w.run(2000)

	if w.maxInFlight > DefaultParallelMigrations {
		t.Fatalf("%d migrations at once", w.maxInFlight)
	}
	for i := range 150 {
		name := fmt.Sprintf("live-%03d", i)
		if w.succeeded[name] != 1 || w.evicted[name] != 0 {
			t.Fatalf("%s: migrated %d times, evicted %d", name, w.succeeded[name], w.evicted[name])
		}
	}
	if w.failed["live-007"] != 1 || w.failed["live-100"] != 1 {
		t.Fatalf("failures %v", w.failed)
	}
	for i := range 50 {
		if name := fmt.Sprintf("stuck-%03d", i); w.evicted[name] != 1 || w.succeeded[name] != 0 {
			t.Fatalf("%s evicted %d times", name, w.evicted[name])
		}
	}
	if len(w.batches) != 5 {
		t.Fatalf("%d eviction batches, want 5 of 10", len(w.batches))
	}
	for i := 1; i < len(w.batches); i++ {
		if gap := w.batches[i].Sub(w.batches[i-1]); gap < DefaultBatchEvictionInterval {
			t.Fatalf("batches %v apart", gap)
		}
	}
	t.Logf("done after %d steps of %v; max in flight %d", steps, w.tick, w.maxInFlight)
}

// With event-driven reconciles, 1000 migrations of migTicks each at parallel 5
// finish next to the bound (1000/5) × T.
func TestSimulatedThroughput(t *testing.T) {
	const n, migTicks = 1000, 20
	w := newWorld(t, many("vm", n, oldImage, migratable), Settings{Methods: both}, migTicks)
	steps := w.run(100000)
	bound := float64(n/DefaultParallelMigrations) * migTicks
	ratio := float64(steps) / bound
	t.Logf("%d steps, bound %.0f, ratio %.3f", steps, bound, ratio)
	if ratio > 1.1 {
		t.Fatalf("ratio %.3f > 1.1", ratio)
	}
}
