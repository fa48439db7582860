package workloadupdate

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// pendingTTL bounds how long a write waits to show in the cache before it is
// forgotten: past it the API (through the cache) is trusted again.
const pendingTTL = time.Minute

// evictionTTL bounds how long an evicted VMI that still looks Running is held
// back from a second eviction.
const evictionTTL = 5 * time.Minute

type created struct {
	key core.Key
	at  time.Time
}

type evicted struct {
	uid types.UID
	at  time.Time
}

type deleted struct {
	namespace, name string
	at              time.Time
}

// pending remembers this process's writes that the cache may not show yet.
type pending struct {
	mu sync.Mutex
	// created: migration name → its VMI, until the cache lists the migration.
	created map[string]created
	// evicted: VMI → the UID evicted, while that VMI still looks Running.
	evicted map[core.Key]evicted
	// deleted: aborted migrations, until the cache drops them.
	deleted map[types.UID]deleted
	// unfinished: the workload-update migrations the last view saw unfinished,
	// by UID, so the next one sees those that finished since: a Succeeded one
	// settles its VMI, a Failed one is reported.
	unfinished map[types.UID]core.Key
	// settling: VMIs whose migration was just seen succeeding; the VMI cache may
	// not show the new launcher yet (informers of two kinds are not in step).
	// They hold only for the target launcher they moved to (settlingTarget): a
	// VMI moved for the last upgrade is outdated at once for the next one.
	settling       map[core.Key]time.Time
	settlingTarget string
	// lastBatch: the last eviction batch, in case the status write is not seen yet.
	lastBatch time.Time
	// written: the last status.workloadUpdates this process wrote; its counters
	// are newer than a cache that has not caught up with the write.
	written *v1.WorkloadUpdatesStatus
}

func newPending() *pending {
	return &pending{
		created: map[string]created{}, evicted: map[core.Key]evicted{},
		deleted: map[types.UID]deleted{}, unfinished: map[types.UID]core.Key{},
		settling: map[core.Key]time.Time{},
	}
}

// cacheGaps are the VMIs the cache may show out of date: in flight, not
// candidates; and the workload-update migrations seen failing since the last
// view.
type cacheGaps struct {
	// evicting: evicted, still listed as running.
	evicting map[core.Key]bool
	// settling: their migration just succeeded, the VMI may still list the old launcher.
	settling map[core.Key]bool
	// failed: workload-update migrations this process saw unfinished (or
	// created) that have failed since.
	failed []*core.Migration
}

// lookup reads single objects from the cache.
type lookup interface {
	VMI(core.Key) *core.VMI
	Migration(namespace, name string) *core.Migration
}

// view folds the remembered writes into what the cache holds: migrations this
// process created but the cache lacks are added (as Pending) to the
// unfinished ones, deleted ones are left out, and VMIs just evicted or just
// migrated are reported as cache gaps. It reads only the unfinished
// migrations and the objects it remembers, never every VMI or migration.
func (p *pending) view(now time.Time, target string, migs core.Migrations, cache lookup) (core.Migrations, cacheGaps) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if target != p.settlingTarget {
		clear(p.settling)
		p.settlingTarget = target
	}
	var gaps cacheGaps
	out := core.Migrations{Finished: migs.Finished, Unfinished: make([]*core.Migration, 0, len(migs.Unfinished)+len(p.created))}
	for _, m := range migs.Unfinished {
		if _, gone := p.deleted[m.UID]; !gone {
			out.Unfinished = append(out.Unfinished, m)
		}
	}
	for uid, d := range p.deleted {
		if m := cache.Migration(d.namespace, d.name); m == nil || m.UID != uid || now.Sub(d.at) > pendingTTL {
			delete(p.deleted, uid)
		}
	}
	for name, c := range p.created {
		if m := cache.Migration(c.key.Namespace, name); m != nil {
			delete(p.created, name)
			p.finishedSince(now, m, &gaps) // finished before this process saw it unfinished
			continue
		}
		if now.Sub(c.at) > pendingTTL {
			delete(p.created, name)
			continue
		}
		out.Unfinished = append(out.Unfinished, &core.Migration{Namespace: c.key.Namespace, Name: name, VMI: c.key.Name,
			Phase: v1.MigrationPending, WorkloadUpdate: true, Created: c.at.Unix()})
	}
	p.noteFinished(now, migs.Unfinished, cache, &gaps)
	gaps.evicting, gaps.settling = p.evicting(now, cache), p.settled(now)
	return out, gaps
}

// noteFinished follows the workload-update migrations from one view to the
// next: those unfinished in the last view that are not now have finished
// (or are gone).
func (p *pending) noteFinished(now time.Time, unfinished []*core.Migration, cache lookup, gaps *cacheGaps) {
	still := make(map[types.UID]core.Key, len(p.unfinished))
	for _, m := range unfinished {
		if m.WorkloadUpdate && m.UID != "" {
			still[m.UID] = core.Key{Namespace: m.Namespace, Name: m.Name}
		}
	}
	for uid, name := range p.unfinished {
		if _, ok := still[uid]; ok {
			continue
		}
		if m := cache.Migration(name.Namespace, name.Name); m != nil && m.UID == uid {
			p.finishedSince(now, m, gaps)
		}
	}
	p.unfinished = still
}

// finishedSince records a workload-update migration this process has seen
// finish: a success settles its VMI, a failure is reported.
func (p *pending) finishedSince(now time.Time, m *core.Migration, gaps *cacheGaps) {
	switch {
	case !m.WorkloadUpdate:
	case m.Phase == v1.MigrationSucceeded:
		p.settling[m.Key()] = now
	case m.Phase == v1.MigrationFailed:
		gaps.failed = append(gaps.failed, m)
	}
}

// settled: the VMIs whose migration succeeded within pendingTTL. Past it a VMI
// that still lists the old launcher is a candidate again.
func (p *pending) settled(now time.Time) map[core.Key]bool {
	if len(p.settling) == 0 {
		return nil
	}
	out := map[core.Key]bool{}
	for k, at := range p.settling {
		if now.Sub(at) > pendingTTL {
			delete(p.settling, k)
			continue
		}
		out[k] = true
	}
	return out
}

// evicting: the remembered evictions whose VMI (the same UID) still runs.
func (p *pending) evicting(now time.Time, cache lookup) map[core.Key]bool {
	if len(p.evicted) == 0 {
		return nil
	}
	out := map[core.Key]bool{}
	for k, e := range p.evicted {
		vmi := cache.VMI(k)
		running := vmi != nil && vmi.Phase == v1.VMIRunning && !vmi.Has(core.Deleting)
		if !running || vmi.UID != e.uid || now.Sub(e.at) > evictionTTL {
			delete(p.evicted, k)
			continue
		}
		out[k] = true
	}
	return out
}

func (p *pending) migrationCreated(m *v1.VirtualMachineInstanceMigration, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.created[m.Name] = created{key: core.MigrationKey(m), at: at}
}

func (p *pending) vmiEvicted(vmi *core.VMI, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evicted[vmi.Key()] = evicted{uid: vmi.UID, at: at}
}

func (p *pending) migrationDeleted(m *core.Migration, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deleted[m.UID] = deleted{namespace: m.Namespace, name: m.Name, at: at}
}

func (p *pending) batchSent(at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastBatch = at
}

// lastEvictionBatch is the batch time to plan from: the remembered one when the
// recorded one is its rounded-up copy (or older), else the recorded one.
func (p *pending) lastEvictionBatch(recorded time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.lastBatch.IsZero() && !core.BatchTime(p.lastBatch).Time.Before(recorded) {
		return p.lastBatch
	}
	return recorded
}

// waiting reports whether writes are still to show in the cache.
func (p *pending) waiting() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.created) > 0 || len(p.deleted) > 0
}

func (p *pending) statusWritten(s *v1.WorkloadUpdatesStatus) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.written = s.DeepCopy()
}

// lastStatus is the status to count on from: what this process last wrote, else
// what the cache shows (after a restart the cache is a fresh list).
func (p *pending) lastStatus(cached *v1.WorkloadUpdatesStatus) *v1.WorkloadUpdatesStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.written != nil {
		return p.written.DeepCopy()
	}
	return cached
}
