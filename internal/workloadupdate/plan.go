package workloadupdate

import (
	"math/rand/v2"
	"sort"
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Inputs is everything one planning step looks at. Zero rate settings take the
// defaults (ParallelMigrations < 0 means no new migrations).
type Inputs struct {
	VMIs                []v1.VirtualMachineInstance
	Migrations          []v1.VirtualMachineInstanceMigration
	TargetLauncherImage string
	Settings
	// Now is the caller's clock reading.
	Now time.Time
	// Seed orders the candidates; pass a new one per reconcile to rotate the order.
	Seed uint64
	// Evicting are VMIs whose launcher pod was just evicted but that still show as
	// running: they are in flight, not candidates for another eviction.
	Evicting map[Key]bool
	// Settling are VMIs whose workload-update migration just succeeded: a VMI
	// still listing the old launcher is a stale copy, not a candidate.
	Settling map[Key]bool
}

// MigrationRequest asks for one migration.
type MigrationRequest struct {
	VMI      *v1.VirtualMachineInstance
	Priority v1.MigrationPriority
}

// Migration is the object to create for this request.
func (r MigrationRequest) Migration() *v1.VirtualMachineInstanceMigration {
	return NewMigration(r.VMI, r.Priority)
}

// AbortRequest asks to delete a VMI's unfinished workload-update migrations.
type AbortRequest struct {
	VMI        *v1.VirtualMachineInstance
	Migrations []*v1.VirtualMachineInstanceMigration
}

// Plan is what to do now. Pointers refer into the Inputs slices.
type Plan struct {
	Migrate []MigrationRequest
	Evict   []*v1.VirtualMachineInstance
	Abort   []AbortRequest
	// Outdated is the count to publish (status and metric).
	Outdated int
	// InFlight counts outdated VMIs already being migrated.
	InFlight int
	// ActiveMigrations is how many migration slots were taken before this plan.
	ActiveMigrations int
	// WaitingMigrate and WaitingEvict count candidates left for a later step.
	WaitingMigrate, WaitingEvict int
	// EvictionBatchAt is set (to Now) when Evict is non-empty: store it as the last
	// eviction batch once the evictions were sent.
	EvictionBatchAt *time.Time
	// Decisions is the bucket of every VMI, by key.
	Decisions map[Key]Decision
	// RequeueAfter is when to look again without an event; 0 means only on events.
	RequeueAfter time.Duration
}

func (in Inputs) withDefaults() Inputs {
	if in.ParallelMigrations == 0 {
		in.ParallelMigrations = DefaultParallelMigrations
	}
	if in.BatchEvictionSize <= 0 {
		in.BatchEvictionSize = DefaultBatchEvictionSize
	}
	if in.BatchEvictionInterval <= 0 {
		in.BatchEvictionInterval = DefaultBatchEvictionInterval
	}
	return in
}

// PlanUpdate classifies every VMI and applies the rate controls. It does not check
// the Gate: callers do that first.
func PlanUpdate(in Inputs) Plan {
	in = in.withDefaults()
	ix := IndexMigrations(in.Migrations)
	p := Plan{ActiveMigrations: ix.Active, Decisions: make(map[Key]Decision, len(in.VMIs))}
	var migrate, evict []*v1.VirtualMachineInstance
	for i := range in.VMIs {
		vmi := &in.VMIs[i]
		k := KeyOf(vmi)
		if _, dup := p.Decisions[k]; dup {
			continue // a list never holds one key twice; be safe anyway
		}
		d := Classify(vmi, in.TargetLauncherImage, ix.Unfinished, in.Methods)
		switch {
		case d.Bucket == Evict && in.Evicting[k]:
			d.Bucket, d.Reason = InFlight, "eviction sent"
		case (d.Bucket == Migrate || d.Bucket == Evict) && in.Settling[k]:
			d.Bucket, d.Reason = InFlight, "migration succeeded, VMI not updated yet"
		}
		p.Decisions[k] = d
		if d.Outdated {
			p.Outdated++
		}
		switch d.Bucket {
		case Migrate:
			migrate = append(migrate, vmi)
		case Evict:
			evict = append(evict, vmi)
		case Abort:
			p.Abort = append(p.Abort, AbortRequest{VMI: vmi, Migrations: d.AbortMigrations})
		case InFlight:
			p.InFlight++
		}
	}
	sort.Slice(p.Abort, func(i, j int) bool { return lessVMI(p.Abort[i].VMI, p.Abort[j].VMI) })

	migrate = order(migrate, in.Seed, ix.Failed)
	slots := in.ParallelMigrations - ix.Active
	for _, vmi := range migrate {
		if len(p.Migrate) >= slots {
			break
		}
		p.Migrate = append(p.Migrate, MigrationRequest{VMI: vmi, Priority: p.Decisions[KeyOf(vmi)].Priority})
	}
	p.WaitingMigrate = len(migrate) - len(p.Migrate)

	next := nextBatch(in.LastEvictionBatch, in.BatchEvictionInterval, in.Now)
	if len(evict) > 0 && !in.Now.Before(next) {
		evict = order(evict, in.Seed^0x9e3779b97f4a7c15, nil)
		p.Evict = evict[:min(in.BatchEvictionSize, len(evict))]
		now := in.Now
		p.EvictionBatchAt = &now
		next = in.Now.Add(in.BatchEvictionInterval)
	}
	p.WaitingEvict = len(evict) - len(p.Evict)
	p.RequeueAfter = requeue(p, next, in.Now)
	return p
}

// nextBatch is when the next eviction batch may run. A last batch slightly in the
// future (clock skew between replicas) is honoured; one more than an interval ahead
// cannot be real (a bad annotation) and is ignored, so it can never block forever.
func nextBatch(last time.Time, interval time.Duration, now time.Time) time.Time {
	if last.IsZero() || last.After(now.Add(interval)) {
		return now
	}
	return last.Add(interval)
}

// requeue: while evictions wait, the time until the next batch (at most the
// resync); while other work remains, the resync; idle, 0.
func requeue(p Plan, next, now time.Time) time.Duration {
	if p.Outdated == 0 && p.InFlight == 0 && len(p.Abort) == 0 {
		return 0
	}
	if p.WaitingEvict > 0 {
		if d := next.Sub(now); d > 0 && d < ResyncInterval {
			return d
		}
	}
	return ResyncInterval
}

// order sorts the candidates by key, shuffles them with the seed, then moves the
// VMIs with more failed workload-update migrations to the back (stable).
func order(vmis []*v1.VirtualMachineInstance, seed uint64, failed map[Key]int) []*v1.VirtualMachineInstance {
	out := append([]*v1.VirtualMachineInstance(nil), vmis...)
	sort.Slice(out, func(i, j int) bool { return lessVMI(out[i], out[j]) })
	r := rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	if len(failed) > 0 {
		sort.SliceStable(out, func(i, j int) bool { return failed[KeyOf(out[i])] < failed[KeyOf(out[j])] })
	}
	return out
}

func lessVMI(a, b *v1.VirtualMachineInstance) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}
