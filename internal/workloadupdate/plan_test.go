package workloadupdate

import (
	"slices"
	"testing"
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func concat(lists ...[]v1.VirtualMachineInstance) []v1.VirtualMachineInstance {
	return slices.Concat(lists...)
}

// Upstream's workload-updater scenarios (§5.10), restated.
func TestPlanScenarios(t *testing.T) {
	mixed := func() []v1.VirtualMachineInstance {
		return concat(many("mig", 50, oldImage, migratable), many("evict", 50, oldImage), many("cur", 100, curImage, migratable))
	}
	running := func(n int, prefix string) (out []v1.VirtualMachineInstanceMigration) {
		for i, v := range many(prefix, n, oldImage) {
			out = append(out, newMig("m-"+v.Name, v.Name, v1.MigrationRunning, i%2 == 0))
		}
		return out
	}
	cases := []struct {
		name                   string
		in                     Inputs
		migrate, evict, outdtd int
	}{
		{"one outdated migratable VMI is migrated", inputs(many("testvm", 1, oldImage, migratable), nil, both), 1, 0, 1},
		{"outdated count covers migratable and evictable, not current", inputs(mixed(), nil, both), 5, 10, 100},
		{"in-flight migrations use the cap (pending user migrations do not)", inputs(many("mig", 20, oldImage, migratable), slices.Concat(
			[]v1.VirtualMachineInstanceMigration{
				newMig("p0", "x0", v1.MigrationPending, false), newMig("p1", "x1", v1.MigrationPending, false),
				newMig("p2", "x2", v1.MigrationPending, false), newMig("p3", "x3", v1.MigrationPending, false),
				newMig("p4", "x4", v1.MigrationPending, false), newMig("s0", "x5", v1.MigrationSucceeded, true),
			}, running(4, "r")), both), 1, 0, 20},
		{"only outdated VMIs are touched", inputs(concat(many("cur", 100, curImage, migratable),
			many("m", 1, oldImage, migratable), many("e", 1, oldImage)), nil, both), 1, 1, 2},
		{"no method: nothing, but counted", inputs(mixed(), nil, Methods{}), 0, 0, 100},
		{"evict only: migratable VMIs are evicted", inputs(many("mig", 50, oldImage, migratable), nil, Methods{Evict: true}), 0, 10, 50},
		{"VMIs with running migrations are not evicted", inputs(many("r", 4, oldImage), running(4, "r"), both), 0, 0, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := PlanUpdate(c.in)
			if len(p.Migrate) != c.migrate || len(p.Evict) != c.evict || p.Outdated != c.outdtd {
				t.Fatalf("migrate %d evict %d outdated %d; want %d %d %d", len(p.Migrate), len(p.Evict), p.Outdated, c.migrate, c.evict, c.outdtd)
			}
			checkInvariants(t, c.in, p)
		})
	}
}

func TestCustomBatchSize(t *testing.T) {
	in := inputs(many("e", 50, oldImage), nil, both)
	in.BatchEvictionSize = 30
	if p := PlanUpdate(in); len(p.Evict) != 30 {
		t.Fatalf("evicted %d, want 30", len(p.Evict))
	}
}

func TestCustomBatchInterval(t *testing.T) {
	vmis := many("e", 50, oldImage)
	in := inputs(vmis, nil, Methods{Evict: true})
	in.BatchEvictionSize, in.BatchEvictionInterval = 5, 2*time.Second
	p := PlanUpdate(in)
	if len(p.Evict) != 5 || p.EvictionBatchAt == nil || !p.EvictionBatchAt.Equal(t0) {
		t.Fatalf("first batch: %d at %v", len(p.Evict), p.EvictionBatchAt)
	}
	if p.RequeueAfter != 2*time.Second {
		t.Fatalf("requeue %v, want the interval", p.RequeueAfter)
	}
	in.LastEvictionBatch = *p.EvictionBatchAt
	in.Now = t0.Add(time.Second)
	if p = PlanUpdate(in); len(p.Evict) != 0 || p.EvictionBatchAt != nil || p.RequeueAfter != time.Second {
		t.Fatalf("within the interval: %d evictions, requeue %v", len(p.Evict), p.RequeueAfter)
	}
	in.Now = t0.Add(3 * time.Second)
	if p = PlanUpdate(in); len(p.Evict) != 5 {
		t.Fatalf("after the interval: %d evictions", len(p.Evict))
	}
}

func TestEvictionIntervalClampsFutureLastBatch(t *testing.T) {
	in := inputs(many("e", 3, oldImage), nil, both)
	in.LastEvictionBatch = t0.Add(10 * time.Second) // skew: honoured
	if p := PlanUpdate(in); len(p.Evict) != 0 || p.RequeueAfter != ResyncInterval {
		t.Fatalf("slightly future last batch: %+v", p)
	}
	in.Now = t0.Add(70 * time.Second)
	if p := PlanUpdate(in); len(p.Evict) != 3 {
		t.Fatal("not evicted once the skewed interval passed")
	}
	in.Now, in.LastEvictionBatch = t0, t0.Add(24*time.Hour) // bogus: ignored
	if p := PlanUpdate(in); len(p.Evict) != 3 {
		t.Fatal("a bogus annotation must not block forever")
	}
}

func TestAbortPlan(t *testing.T) {
	migs := []v1.VirtualMachineInstanceMigration{
		newMig("run", "a", v1.MigrationRunning, true),
		newMig("failed", "a", v1.MigrationFailed, true),
		newMig("done", "b", v1.MigrationSucceeded, true),
	}
	p := PlanUpdate(inputs([]v1.VirtualMachineInstance{newVMI("a", curImage), newVMI("b", curImage)}, migs, both))
	if len(p.Abort) != 1 || p.Abort[0].VMI.Name != "a" || len(p.Abort[0].Migrations) != 1 || p.Abort[0].Migrations[0].Name != "run" {
		t.Fatalf("abort %+v", p.Abort)
	}
	if p.Outdated != 0 || p.RequeueAfter != ResyncInterval {
		t.Fatalf("outdated %d requeue %v", p.Outdated, p.RequeueAfter)
	}
}

func TestIdleRequeue(t *testing.T) {
	p := PlanUpdate(inputs(many("c", 3, curImage, migratable), nil, both))
	if p.Outdated != 0 || p.RequeueAfter != 0 {
		t.Fatalf("idle: %+v", p)
	}
	p = PlanUpdate(inputs(many("o", 3, oldImage, migratable), nil, both))
	if p.RequeueAfter != ResyncInterval {
		t.Fatalf("a real 30 s resync, got %v", p.RequeueAfter)
	}
}

func TestOwnPendingMigrationsHoldSlots(t *testing.T) {
	vmis := many("vm", 20, oldImage, migratable)
	in := inputs(vmis, nil, both)
	p := PlanUpdate(in)
	in.Migrations = migsOf(created(p, 0)...)
	in.Seed = 2
	if p2 := PlanUpdate(in); len(p2.Migrate) != 0 || p2.InFlight != 5 || p2.ActiveMigrations != 5 {
		t.Fatalf("second plan: %d new, %d in flight", len(p2.Migrate), p2.InFlight)
	}
}

// created turns a plan's migration requests into Pending migration objects.
func created(p Plan, seq int) []v1.VirtualMachineInstanceMigration {
	var out []v1.VirtualMachineInstanceMigration
	for i, r := range p.Migrate {
		m := r.Migration()
		m.Name = m.GenerateName + string(rune('a'+seq%26)) + string(rune('a'+i))
		m.Status.Phase = v1.MigrationPending
		out = append(out, *m)
	}
	return out
}

func TestPlanIsIdempotent(t *testing.T) {
	vmis := concat(many("mig", 3, oldImage, migratable), many("ev", 2, oldImage))
	in := inputs(vmis, nil, both)
	in.ParallelMigrations = 50
	p := PlanUpdate(in)
	in.Migrations = migsOf(created(p, 0)...)
	p2 := PlanUpdate(in)
	for _, r := range p2.Migrate {
		t.Errorf("second migration for %s", r.VMI.Name)
	}
	if len(p.Migrate) != 3 {
		t.Fatalf("first plan migrated %d", len(p.Migrate))
	}
}

func TestOrderDeterministicAndRotating(t *testing.T) {
	in := inputs(many("vm", 40, oldImage, migratable), nil, both)
	a, _ := names(PlanUpdate(in))
	b, _ := names(PlanUpdate(in))
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, different order: %v %v", a, b)
	}
	seen := map[string]bool{}
	for seed := range uint64(30) {
		in.Seed = seed
		m, _ := names(PlanUpdate(in))
		for _, n := range m {
			seen[n] = true
		}
	}
	if len(seen) < 30 {
		t.Fatalf("changing seeds reached only %d of 40 VMIs", len(seen))
	}
}

func TestFailedMigrationsRetriedLast(t *testing.T) {
	vmis := many("vm", 10, oldImage, migratable)
	var migs []v1.VirtualMachineInstanceMigration
	for _, v := range vmis[:5] {
		migs = append(migs, newMig("f-"+v.Name, v.Name, v1.MigrationFailed, true))
	}
	in := inputs(vmis, migs, both)
	for seed := range uint64(20) {
		in.Seed = seed
		m, _ := names(PlanUpdate(in))
		for _, n := range m {
			if n < "vm-005" {
				t.Fatalf("seed %d: retried failed %s before fresh VMIs", seed, n)
			}
		}
	}
	in.VMIs = CompactVMIs(vmis[:5]) // only the failed ones remain: they are retried
	if m, _ := names(PlanUpdate(in)); len(m) != 5 {
		t.Fatalf("failed VMIs not retried: %v", m)
	}
}

// checkInvariants holds for every plan.
func checkInvariants(t *testing.T, in Inputs, p Plan) {
	t.Helper()
	in = in.withDefaults()
	ix := indexUnfinished(in.Migrations.Unfinished)
	if limit := max(p.ClusterCap-len(ix.slots), 0); len(p.Migrate) > limit {
		t.Fatalf("%d new migrations > cap %d - active %d", len(p.Migrate), p.ClusterCap, len(ix.slots))
	}
	if in.ParallelMigrations != 0 && p.ClusterCap > max(in.ParallelMigrations, 0) {
		t.Fatalf("cluster cap %d > parallelMigrationsPerCluster %d", p.ClusterCap, in.ParallelMigrations)
	}
	if in.PerNode > 0 {
		out := activeByNode(ix.slots, nodesOf(ix.slots, in.VMIs))
		for _, r := range p.Migrate {
			if out[r.VMI.Node]++; out[r.VMI.Node] > in.PerNode {
				t.Fatalf("node %q sends %d migrations, cap %d", r.VMI.Node, out[r.VMI.Node], in.PerNode)
			}
		}
	}
	if p.Hold != "" && (len(p.Migrate) > 0 || len(p.Evict) > 0) {
		t.Fatalf("held (%s) yet %d migrations and %d evictions start", p.Hold, len(p.Migrate), len(p.Evict))
	}
	if len(p.Evict) > in.BatchEvictionSize {
		t.Fatalf("%d evictions > batch %d", len(p.Evict), in.BatchEvictionSize)
	}
	if len(p.Evict) > 0 && !in.LastEvictionBatch.IsZero() && in.Now.Before(in.LastEvictionBatch.Add(in.BatchEvictionInterval)) &&
		!in.LastEvictionBatch.After(in.Now.Add(in.BatchEvictionInterval)) {
		t.Fatal("eviction before the interval")
	}
	seen := map[Key]string{}
	mark := func(v *VMI, what string) {
		if prev, ok := seen[v.Key()]; ok {
			t.Fatalf("%s in %s and %s", v.Key(), prev, what)
		}
		seen[v.Key()] = what
		if len(ix.byVMI[v.Key()]) > 0 && what != "abort" {
			t.Fatalf("%s has an unfinished migration but is in %s", v.Key(), what)
		}
	}
	for _, r := range p.Migrate {
		if why := in.Targets.why(r.VMI); why != "" {
			t.Fatalf("%s migrated though %s", r.VMI.Key(), why)
		}
		mark(r.VMI, "migrate")
	}
	for _, v := range p.Evict {
		mark(v, "evict")
	}
	for _, a := range p.Abort {
		mark(a.VMI, "abort")
	}
	if p.RequeueAfter < 0 || p.RequeueAfter > ResyncInterval {
		t.Fatalf("requeue %v", p.RequeueAfter)
	}
}

// A VMI whose launcher pod was just evicted still looks Running and outdated
// until its VM replaces it: it must not take a place in the next batch.
func TestEvictingVMIsAreInFlight(t *testing.T) {
	in := inputs(many("e", 12, oldImage), nil, both)
	in.Evicting = map[Key]bool{{ns, "e-000"}: true, {ns, "e-001"}: true}
	p := PlanUpdate(in)
	if len(p.Evict) != 10 || p.InFlight != 2 || p.Outdated != 12 || p.WaitingEvict != 0 {
		t.Fatalf("evict %d, in flight %d, outdated %d, waiting %d; want 10, 2, 12, 0",
			len(p.Evict), p.InFlight, p.Outdated, p.WaitingEvict)
	}
	for _, v := range p.Evict {
		if in.Evicting[v.Key()] {
			t.Fatalf("%s evicted again", v.Name)
		}
	}
}

// The migration informer can report Succeeded before the VMI informer shows the
// new launcher: such a VMI is in flight, not a candidate for a second migration.
func TestSettlingVMIsAreInFlight(t *testing.T) {
	in := inputs(append(many("m", 3, oldImage, migratable), many("e", 1, oldImage)...), nil, both)
	in.Settling = map[Key]bool{{ns, "m-000"}: true, {ns, "e-000"}: true}
	p := PlanUpdate(in)
	mig, ev := names(p)
	if len(mig) != 2 || len(ev) != 0 || p.InFlight != 2 || p.Outdated != 4 {
		t.Fatalf("migrate %v, evict %v, in flight %d, outdated %d; want 2 migrations, no eviction, 2, 4",
			mig, ev, p.InFlight, p.Outdated)
	}
	if d := p.Decisions[Key{ns, "m-000"}]; d.Bucket != InFlight {
		t.Fatalf("settling VMI decided %+v", d)
	}
}
