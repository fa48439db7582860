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

// pending remembers this process's writes that the cache may not show yet.
type pending struct {
	mu sync.Mutex
	// created: migration name → its VMI, until the cache lists the migration.
	created map[string]created
	// evicted: VMI → the UID evicted, while that VMI still looks Running.
	evicted map[core.Key]evicted
	// deleted: aborted migrations, until the cache drops them.
	deleted map[types.UID]time.Time
	// failed: failed migrations already reported by an Event.
	failed map[types.UID]bool
	// unfinished: the workload-update migrations the last view saw unfinished, so
	// a Succeeded one is known to have just finished.
	unfinished map[types.UID]bool
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
		deleted: map[types.UID]time.Time{}, failed: map[types.UID]bool{},
		unfinished: map[types.UID]bool{}, settling: map[core.Key]time.Time{},
	}
}

// cacheGaps are the VMIs the cache may show out of date: in flight, not candidates.
type cacheGaps struct {
	// evicting: evicted, still listed as running.
	evicting map[core.Key]bool
	// settling: their migration just succeeded, the VMI may still list the old launcher.
	settling map[core.Key]bool
}

// view folds the remembered writes into what the cache listed: migrations this
// process created but the cache lacks are added (as Pending), deleted ones are
// left out, and VMIs just evicted or just migrated are reported as cache gaps.
func (p *pending) view(now time.Time, target string, vmis []v1.VirtualMachineInstance, migs []v1.VirtualMachineInstanceMigration) (
	[]v1.VirtualMachineInstanceMigration, cacheGaps) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if target != p.settlingTarget {
		clear(p.settling)
		p.settlingTarget = target
	}
	listed := make(map[string]bool, len(migs))
	out := make([]v1.VirtualMachineInstanceMigration, 0, len(migs)+len(p.created))
	seen := map[types.UID]bool{}
	for i := range migs {
		m := &migs[i]
		listed[m.Namespace+"/"+m.Name] = true
		if _, gone := p.deleted[m.UID]; gone {
			seen[m.UID] = true
			continue
		}
		out = append(out, *m)
	}
	for uid, at := range p.deleted {
		if !seen[uid] || now.Sub(at) > pendingTTL {
			delete(p.deleted, uid)
		}
	}
	for name, c := range p.created {
		if listed[c.key.Namespace+"/"+name] || now.Sub(c.at) > pendingTTL {
			delete(p.created, name)
			continue
		}
		m := core.NewMigration(&v1.VirtualMachineInstance{}, v1.PrioritySystemCritical)
		m.Name, m.Namespace, m.Spec.VMIName = name, c.key.Namespace, c.key.Name
		m.Status.Phase = v1.MigrationPending
		out = append(out, *m)
	}
	p.noteSucceeded(now, migs)
	return out, cacheGaps{evicting: p.evicting(now, vmis), settling: p.settled(now)}
}

// noteSucceeded marks the VMIs whose workload-update migration was unfinished in
// the last view and has succeeded since.
func (p *pending) noteSucceeded(now time.Time, migs []v1.VirtualMachineInstanceMigration) {
	unfinished := map[types.UID]bool{}
	for i := range migs {
		m := &migs[i]
		if m.UID == "" || !core.IsWorkloadUpdate(m) {
			continue
		}
		switch {
		case !core.IsFinished(m):
			unfinished[m.UID] = true
		case m.Status.Phase == v1.MigrationSucceeded && p.unfinished[m.UID]:
			p.settling[core.MigrationKey(m)] = now
		}
	}
	p.unfinished = unfinished
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
func (p *pending) evicting(now time.Time, vmis []v1.VirtualMachineInstance) map[core.Key]bool {
	if len(p.evicted) == 0 {
		return nil
	}
	running := make(map[core.Key]types.UID, len(vmis))
	for i := range vmis {
		if vmis[i].Status.Phase == v1.VMIRunning && vmis[i].DeletionTimestamp == nil {
			running[core.KeyOf(&vmis[i])] = vmis[i].UID
		}
	}
	out := map[core.Key]bool{}
	for k, e := range p.evicted {
		if running[k] != e.uid || now.Sub(e.at) > evictionTTL {
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

func (p *pending) vmiEvicted(vmi *v1.VirtualMachineInstance, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evicted[core.KeyOf(vmi)] = evicted{uid: vmi.UID, at: at}
}

func (p *pending) migrationDeleted(m *v1.VirtualMachineInstanceMigration, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deleted[m.UID] = at
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

// newFailures returns the failed workload-update migrations not reported yet, and
// forgets reported ones that are gone from the list.
func (p *pending) newFailures(migs []v1.VirtualMachineInstanceMigration) []*v1.VirtualMachineInstanceMigration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*v1.VirtualMachineInstanceMigration
	present := map[types.UID]bool{}
	for i := range migs {
		m := &migs[i]
		if m.Status.Phase != v1.MigrationFailed || !core.IsWorkloadUpdate(m) {
			continue
		}
		present[m.UID] = true
		if !p.failed[m.UID] {
			p.failed[m.UID] = true
			out = append(out, m)
		}
	}
	for uid := range p.failed {
		if !present[uid] {
			delete(p.failed, uid)
		}
	}
	return out
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
