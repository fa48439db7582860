package workloadupdate

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/maintenance"
)

// Inputs is everything one planning step looks at. Zero rate settings take the
// defaults (ParallelMigrations < 0 means no new migrations).
type Inputs struct {
	// VMIs are every VMI, each key once (the cache's compact forms, shared:
	// never modified).
	VMIs                []*VMI
	Migrations          Migrations
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
	// Targets are the nodes migrations could land on; nil: not checked.
	Targets *Targets
	// Explain fills Plan.Decisions (the plan command shows them; the updater
	// does not read them, and at 10,000 VMIs they are a map a plan need not
	// build).
	Explain bool
}

// MigrationRequest asks for one migration.
type MigrationRequest struct {
	VMI      *VMI
	Priority v1.MigrationPriority
}

// Migration is the object to create for this request.
func (r MigrationRequest) Migration() *v1.VirtualMachineInstanceMigration {
	return NewMigration(r.VMI, r.Priority)
}

// AbortRequest asks to delete a VMI's unfinished workload-update migrations.
type AbortRequest struct {
	VMI        *VMI
	Migrations []*Migration
}

// Plan is what to do now. Pointers are the Inputs' own.
type Plan struct {
	Migrate []MigrationRequest
	Evict   []*VMI
	Abort   []AbortRequest
	// Outdated is the count to publish (status and metric).
	Outdated int
	// InFlight counts outdated VMIs already being migrated.
	InFlight int
	// ActiveMigrations is how many migration slots were taken before this plan.
	ActiveMigrations int
	// ClusterCap is how many migrations may run at once now.
	ClusterCap int
	// WaitingMigrate and WaitingEvict count candidates left for a later step.
	WaitingMigrate, WaitingEvict int
	// Choices count the outdated VMIs by how they are to be moved.
	Choices v1.WorkloadUpdateChoices
	// BackingOff counts VMIs waiting out the backoff after a failed migration.
	BackingOff int
	// NeedsAttention are the VMIs whose migrations failed MaxFailures times,
	// with their failure counts, sorted.
	NeedsAttention []Attention
	// NotMovable are the VMIs to migrate that no other node can take, and that
	// may not be evicted, with why, sorted: no migration is created for them.
	NotMovable []Unmovable
	// InvalidChoices are outdated VMIs whose choice value means nothing, with it.
	InvalidChoices map[Key]string
	// Hold says why nothing new starts (paused, outside the windows); empty when
	// new moves may start.
	Hold string
	// Window is the maintenance windows' state at Now.
	Window maintenance.State
	// EvictionBatchAt is set (to Now) when Evict is non-empty: store it as the last
	// eviction batch once the evictions were sent.
	EvictionBatchAt *time.Time
	// Decisions is the bucket of every VMI, by key, when Inputs.Explain asks.
	Decisions map[Key]Decision
	// RequeueAfter is when to look again without an event; 0 means only on events.
	RequeueAfter time.Duration
}

// Unmovable is a VMI no migration can move, and why.
type Unmovable struct {
	Key    Key
	Reason string
}

// Attention is a VMI that needs attention, and how many migrations failed.
type Attention struct {
	Key      Key
	Failures int
}

func (in Inputs) withDefaults() Inputs {
	if in.BatchEvictionSize <= 0 {
		in.BatchEvictionSize = DefaultBatchEvictionSize
	}
	if in.BatchEvictionInterval <= 0 {
		in.BatchEvictionInterval = DefaultBatchEvictionInterval
	}
	return in
}

// candidates is the classification pass's result, before the rate controls.
type candidates struct {
	migrate, evict []*VMI
	// userTriggered are the VMIs to migrate for a pending change, not an
	// upgrade (priority user-triggered; the others system-critical).
	userTriggered map[*VMI]bool
	failures      map[Key]int
	outdatedNodes map[string]bool
	retryAt       time.Time // the earliest end of a backoff
}

// PlanUpdate classifies every VMI and applies the rate controls. It does not check
// the Gate: callers do that first.
func PlanUpdate(in Inputs) Plan {
	in = in.withDefaults()
	ix := indexUnfinished(in.Migrations.Unfinished)
	p := Plan{ActiveMigrations: len(ix.slots)}
	if in.Explain {
		p.Decisions = make(map[Key]Decision, len(in.VMIs))
	}
	c := classifyAll(in, ix, &p)
	sort.Slice(p.Abort, func(i, j int) bool { return lessVMI(p.Abort[i].VMI, p.Abort[j].VMI) })
	sort.Slice(p.NeedsAttention, func(i, j int) bool { return p.NeedsAttention[i].Key.String() < p.NeedsAttention[j].Key.String() })
	sort.Slice(p.NotMovable, func(i, j int) bool { return p.NotMovable[i].Key.String() < p.NotMovable[j].Key.String() })

	p.Window = maintenance.Evaluate(in.Windows, in.Now)
	p.Hold = holdReason(in.Invalid, in.Paused, p.Window)
	p.ClusterCap = clusterCap(in.Settings, len(c.outdatedNodes))
	next := nextBatch(in.LastEvictionBatch, in.BatchEvictionInterval, in.Now)
	if p.Hold == "" {
		pace := Pacing{ClusterCap: p.ClusterCap, PerNode: in.PerNode, ActiveByNode: activeByNode(ix.slots, nodesOf(ix.slots, in.VMIs))}
		for _, vmi := range pace.pick(order(c.migrate, in.Seed, c.failures), p.ClusterCap-len(ix.slots)) {
			priority := v1.PrioritySystemCritical
			if c.userTriggered[vmi] {
				priority = v1.PriorityUserTriggered
			}
			p.Migrate = append(p.Migrate, MigrationRequest{VMI: vmi, Priority: priority})
		}
		if len(c.evict) > 0 && !in.Now.Before(next) {
			evict := order(c.evict, in.Seed^0x9e3779b97f4a7c15, nil)
			p.Evict = evict[:min(in.BatchEvictionSize, len(evict))]
			now := in.Now
			p.EvictionBatchAt = &now
			next = in.Now.Add(in.BatchEvictionInterval)
		}
	}
	p.WaitingMigrate = len(c.migrate) - len(p.Migrate)
	p.WaitingEvict = len(c.evict) - len(p.Evict)
	p.RequeueAfter = requeue(p, in.Now, next, c.retryAt, p.Window.NextOpen)
	return p
}

// classifyAll puts every VMI in its bucket, applying its choice and the backoff,
// and fills the plan's counts.
func classifyAll(in Inputs, ix inFlight, p *Plan) candidates {
	c := candidates{failures: map[Key]int{}, outdatedNodes: map[string]bool{}}
	for _, vmi := range in.VMIs {
		k := vmi.Key()
		choice, raw := ChoiceOf(vmi)
		methods := choice.methodsFor(in.Methods)
		unfinished := ix.byVMI[k]
		d := Classify(vmi, in.TargetLauncherImage, unfinished, methods)
		if d.Bucket == Migrate && !in.Settling[k] { // an evicted VMI no node can take stays evicted
			d = withTarget(in.Targets, p, vmi, methods, d)
		}
		switch {
		case d.Bucket == Evict && in.Evicting[k]:
			d.Bucket, d.Reason = InFlight, "eviction sent"
		case (d.Bucket == Migrate || d.Bucket == Evict) && in.Settling[k]:
			d.Bucket, d.Reason = InFlight, "migration succeeded, VMI not updated yet"
		case d.Bucket == Migrate:
			d = c.backOff(in, p, vmi, choice, in.Migrations.finished(k), d)
		case d.Outdated && d.Bucket == Skip && choice == ChoiceNone:
			d.Reason = "left alone by its " + ChoiceKey
		case d.Outdated && d.Bucket == Skip && choice == ChoiceInvalid:
			d.Reason = "left alone: invalid " + ChoiceKey
		}
		if p.Decisions != nil {
			p.Decisions[k] = d
		}
		if d.Outdated {
			p.Outdated++
			c.outdatedNodes[vmi.Node] = true
			countChoice(&p.Choices, choice, d.Bucket)
			if choice == ChoiceInvalid {
				if p.InvalidChoices == nil {
					p.InvalidChoices = map[Key]string{}
				}
				p.InvalidChoices[k] = raw
			}
		}
		switch d.Bucket {
		case Migrate:
			c.migrate = append(c.migrate, vmi)
			if d.Priority == v1.PriorityUserTriggered {
				if c.userTriggered == nil {
					c.userTriggered = map[*VMI]bool{}
				}
				c.userTriggered[vmi] = true
			}
		case Evict:
			c.evict = append(c.evict, vmi)
		case Abort:
			p.Abort = append(p.Abort, AbortRequest{VMI: vmi, Migrations: d.AbortMigrations})
		case InFlight:
			p.InFlight++
		}
	}
	return c
}

// withTarget keeps a VMI to migrate in Migrate when another node could take it;
// else it is evicted when its methods allow, or left, reported not movable.
func withTarget(t *Targets, p *Plan, vmi *VMI, m Methods, d Decision) Decision {
	why := t.why(vmi)
	switch {
	case why == "":
		return d
	case m.Evict:
		d.Bucket, d.Reason = Evict, "no migration target ("+why+"), evicted instead"
	default:
		p.NotMovable = append(p.NotMovable, Unmovable{Key: vmi.Key(), Reason: why})
		d.Bucket, d.Reason = Skip, "not movable: "+why
	}
	return d
}

// backOff applies the backoff to a VMI that would be migrated: it waits, or it
// needs attention (and is then evicted when the settings say so), or it goes.
func (c *candidates) backOff(in Inputs, p *Plan, vmi *VMI, choice Choice, finished []*Migration, d Decision) Decision {
	f := failuresOf(vmi, finished)
	if f.Count > 0 {
		c.failures[vmi.Key()] = f.Count
	}
	verdict, at := in.Backoff.Decide(f, in.Now)
	switch verdict {
	case Wait:
		p.BackingOff++
		if c.retryAt.IsZero() || at.Before(c.retryAt) {
			c.retryAt = at
		}
		d.Bucket, d.Reason = Skip, fmt.Sprintf("backing off after %d failed migrations, until %s", f.Count, at.UTC().Format(time.RFC3339))
	case GiveUp:
		p.NeedsAttention = append(p.NeedsAttention, Attention{Key: vmi.Key(), Failures: f.Count})
		d.Bucket, d.Reason = Skip, fmt.Sprintf("needs attention: %d failed migrations", f.Count)
		if in.Backoff.EvictAfterMaxFailures && choice != ChoiceLiveMigrate {
			d.Bucket, d.Reason = Evict, d.Reason+", evicted instead"
		}
	}
	return d
}

func countChoice(c *v1.WorkloadUpdateChoices, choice Choice, b Bucket) {
	switch {
	case choice == ChoiceNone:
		c.Leave++
	case choice == ChoiceInvalid:
		c.Invalid++
	case choice == ChoiceEvict || b == Evict:
		c.Evict++
	default:
		c.LiveMigrate++
	}
}

// holdReason is why nothing new starts, or "".
func holdReason(invalid error, paused bool, w maintenance.State) string {
	switch {
	case invalid != nil:
		return "a setting cannot be read, nothing new starts until it is fixed: " + invalid.Error()
	case paused:
		return "paused: spec.workloadUpdates.paused is true"
	case w.Open:
		return ""
	case !w.NextOpen.IsZero():
		return "outside the maintenance windows; the next opens at " + w.NextOpen.UTC().Format(time.RFC3339)
	case w.Err != nil:
		return "no maintenance window can open: " + w.Err.Error()
	}
	return "outside the maintenance windows"
}

// activeByNode counts the slot-taking migrations by the node they leave.
func activeByNode(slots []*Migration, nodeOf func(Key) string) map[string]int {
	out := map[string]int{}
	for _, m := range slots {
		out[sourceNode(m, nodeOf)]++
	}
	return out
}

// nodesOf looks up the nodes of the VMIs the slot-taking migrations move
// that do not say their source yet (pending ones): one pass over the VMIs,
// holding only those.
func nodesOf(slots []*Migration, vmis []*VMI) func(Key) string {
	nodes := map[Key]string{}
	for _, m := range slots {
		if stateSource(m.State) == "" {
			nodes[m.Key()] = ""
		}
	}
	if len(nodes) > 0 {
		for _, vmi := range vmis {
			if _, ok := nodes[vmi.Key()]; ok {
				nodes[vmi.Key()] = vmi.Node
			}
		}
	}
	return func(k Key) string { return nodes[k] }
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

// requeue: idle, 0 (only events); else the soonest of the next eviction batch
// (while evictions wait), the end of a backoff and the next window opening, at
// most the resync.
func requeue(p Plan, now, nextBatch, retryAt, nextOpen time.Time) time.Duration {
	if p.Outdated == 0 && p.InFlight == 0 && len(p.Abort) == 0 {
		return 0
	}
	d := ResyncInterval
	soonest := func(at time.Time) {
		if w := at.Sub(now); !at.IsZero() && w > 0 && w < d {
			d = w
		}
	}
	if p.WaitingEvict > 0 {
		soonest(nextBatch)
	}
	soonest(retryAt)
	soonest(nextOpen)
	return d
}

// order sorts the candidates by key, shuffles them with the seed, then moves the
// VMIs with more failed workload-update migrations to the back (stable).
func order(vmis []*VMI, seed uint64, failed map[Key]int) []*VMI {
	out := append([]*VMI(nil), vmis...)
	sort.Slice(out, func(i, j int) bool { return lessVMI(out[i], out[j]) })
	r := rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909))
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	if len(failed) > 0 {
		sort.SliceStable(out, func(i, j int) bool { return failed[out[i].Key()] < failed[out[j].Key()] })
	}
	return out
}

func lessVMI(a, b *VMI) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}
