package workloadupdate

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func vmi(name string, uid types.UID, phase v1.VirtualMachineInstancePhase) v1.VirtualMachineInstance {
	return v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid},
		Status:     v1.VirtualMachineInstanceStatus{Phase: phase},
	}
}

func migration(name, vmiName string, uid types.UID, phase v1.VirtualMachineInstanceMigrationPhase) v1.VirtualMachineInstanceMigration {
	m := core.NewMigration(&core.VMI{Namespace: "ns", Name: vmiName}, v1.PrioritySystemCritical)
	m.Name, m.UID, m.Status.Phase = name, uid, phase
	return *m
}

// snapshot is a cache holding some VMIs and migrations.
type snapshot struct {
	vmis map[core.Key]*core.VMI
	migs map[string]*core.Migration
}

func (s snapshot) VMI(k core.Key) *core.VMI { return s.vmis[k] }

func (s snapshot) Migration(namespace, name string) *core.Migration {
	return s.migs[namespace+"/"+name]
}

// view is p's view of a cache holding vmis and migs.
func view(p *pending, now time.Time, target string, vmis []v1.VirtualMachineInstance, migs []v1.VirtualMachineInstanceMigration) (
	[]*core.Migration, cacheGaps) {
	s := snapshot{vmis: map[core.Key]*core.VMI{}, migs: map[string]*core.Migration{}}
	for _, v := range core.CompactVMIs(vmis) {
		s.vmis[v.Key()] = v
	}
	compact := core.CompactMigrations(migs)
	for _, m := range compact {
		s.migs[m.Namespace+"/"+m.Name] = m
	}
	out, gaps := p.view(now, target, core.MigrationsOf(compact), s)
	return out.Unfinished, gaps
}

// A migration this process created stands in for itself until the cache lists it,
// so an early event cannot make a second one for the same VMI.
func TestPendingCreationsFillTheCacheGap(t *testing.T) {
	p := newPending()
	created := migration("kubevirt-workload-update-abc", "a", "", "")
	p.migrationCreated(&created, t0)
	tests := []struct {
		name   string
		now    time.Time
		listed []v1.VirtualMachineInstanceMigration
		want   int
	}{
		{"not listed yet: added", t0.Add(time.Second), nil, 1},
		{"listed: the listed one only", t0.Add(2 * time.Second), []v1.VirtualMachineInstanceMigration{
			migration("kubevirt-workload-update-abc", "a", "u1", v1.MigrationRunning)}, 1},
		{"forgotten once listed", t0.Add(3 * time.Second), nil, 0},
	}
	for _, tt := range tests {
		got, _ := view(p, tt.now, "launcher:v2", nil, tt.listed)
		if len(got) != tt.want {
			t.Fatalf("%s: %d migrations, want %d", tt.name, len(got), tt.want)
		}
		if len(got) == 1 && (got[0].VMI != "a" || !got[0].WorkloadUpdate) {
			t.Fatalf("%s: %+v", tt.name, got[0])
		}
	}
	if p.waiting() {
		t.Fatal("nothing should be pending any more")
	}
}

func TestPendingCreationExpires(t *testing.T) {
	p := newPending()
	m := migration("kubevirt-workload-update-x", "a", "", "")
	p.migrationCreated(&m, t0)
	if got, _ := view(p, t0.Add(pendingTTL+time.Second), "launcher:v2", nil, nil); len(got) != 0 || p.waiting() {
		t.Fatalf("an unseen creation must be forgotten after %s: %d left", pendingTTL, len(got))
	}
}

func TestDeletedMigrationsHiddenUntilGone(t *testing.T) {
	p := newPending()
	m := migration("m", "a", "u1", v1.MigrationPending)
	p.migrationDeleted(core.CompactMigration(&m), t0)
	if got, _ := view(p, t0, "launcher:v2", nil, []v1.VirtualMachineInstanceMigration{m}); len(got) != 0 {
		t.Fatal("an aborted migration still in the cache must be left out")
	}
	if _, _ = view(p, t0, "launcher:v2", nil, nil); p.waiting() {
		t.Fatal("the deletion must be forgotten once the cache drops it")
	}
}

func TestEvictingUntilReplaced(t *testing.T) {
	p := newPending()
	running := vmi("a", "u1", v1.VMIRunning)
	p.vmiEvicted(core.CompactVMI(&running), t0)
	key := core.KeyOf(&running)
	tests := []struct {
		name string
		now  time.Time
		vmis []v1.VirtualMachineInstance
		want bool
	}{
		{"still running", t0.Add(time.Second), []v1.VirtualMachineInstance{running}, true},
		{"replaced by a new VMI of the same name", t0.Add(2 * time.Second),
			[]v1.VirtualMachineInstance{vmi("a", "u2", v1.VMIRunning)}, false},
	}
	for _, tt := range tests {
		_, gaps := view(p, tt.now, "launcher:v2", tt.vmis, nil)
		evicting := gaps.evicting
		if evicting[key] != tt.want {
			t.Fatalf("%s: evicting=%v, want %v", tt.name, evicting[key], tt.want)
		}
	}
	p.vmiEvicted(core.CompactVMI(&running), t0)
	if _, gaps := view(p, t0.Add(evictionTTL+time.Second), "launcher:v2", []v1.VirtualMachineInstance{running}, nil); gaps.evicting[key] {
		t.Fatal("an eviction that never took effect must be retried after the TTL")
	}
}

func TestLastEvictionBatchPrefersTheExactRememberedTime(t *testing.T) {
	p := newPending()
	if got := p.lastEvictionBatch(t0); !got.Equal(t0) {
		t.Fatalf("nothing remembered: got %s, want the recorded %s", got, t0)
	}
	sent := t0.Add(time.Minute + 300*time.Millisecond)
	p.batchSent(sent)
	for _, tt := range []struct {
		name     string
		recorded time.Time
		want     time.Time
	}{
		{"an older status", t0, sent},
		{"the status still without our write", time.Time{}, sent},
		{"our write, rounded up to whole seconds", core.BatchTime(sent).Time, sent},
		{"a later batch by another process", sent.Add(5 * time.Second), sent.Add(5 * time.Second)},
	} {
		if got := p.lastEvictionBatch(tt.recorded); !got.Equal(tt.want) {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
}

// A workload-update migration seen unfinished, then Failed, is reported once;
// another actor's, and one that had failed before this process saw it, are
// not (a restart does not announce old failures again).
func TestFailuresReportedOnce(t *testing.T) {
	p := newPending()
	running := migration("m1", "a", "u1", v1.MigrationRunning)
	foreign := migration("m2", "a", "u2", v1.MigrationRunning)
	foreign.Annotations = nil
	old := migration("m3", "b", "u3", v1.MigrationFailed)
	view(p, t0, "launcher:v2", nil, []v1.VirtualMachineInstanceMigration{running, foreign, old})
	failed, foreignFailed := running, foreign
	failed.Status.Phase, foreignFailed.Status.Phase = v1.MigrationFailed, v1.MigrationFailed
	list := []v1.VirtualMachineInstanceMigration{failed, foreignFailed, old}
	if _, gaps := view(p, t0.Add(time.Second), "launcher:v2", nil, list); len(gaps.failed) != 1 || gaps.failed[0].UID != "u1" {
		t.Fatalf("first look after the failure: %v", gaps.failed)
	}
	if _, gaps := view(p, t0.Add(2*time.Second), "launcher:v2", nil, list); len(gaps.failed) != 0 {
		t.Fatalf("reported twice: %v", gaps.failed)
	}
	// One this process created that the cache first shows Failed.
	created := migration("m4", "c", "", "")
	p.migrationCreated(&created, t0)
	created.UID, created.Status.Phase = "u4", v1.MigrationFailed
	if _, gaps := view(p, t0.Add(3*time.Second), "launcher:v2", nil, append(list, created)); len(gaps.failed) != 1 || gaps.failed[0].UID != "u4" {
		t.Fatalf("a created migration first seen failed: %v", gaps.failed)
	}
}

// The counters in status must not go back when the cache lags behind a write.
func TestLastStatusPrefersTheWrittenOne(t *testing.T) {
	p := newPending()
	cached := &v1.WorkloadUpdatesStatus{DeploymentID: "a", MigrationsCreated: 3}
	if got := p.lastStatus(cached); got != cached {
		t.Fatal("with nothing written, the cached status counts")
	}
	p.statusWritten(&v1.WorkloadUpdatesStatus{DeploymentID: "a", MigrationsCreated: 8})
	if got := p.lastStatus(cached); got.MigrationsCreated != 8 {
		t.Fatalf("a stale cache won: %+v", got)
	}
}

// Only a Succeeded seen after the same migration was seen unfinished marks its
// VMI as settling, and only for pendingTTL: an old Succeeded migration listed at
// start-up holds nothing.
func TestSettlingAfterAMigrationSucceeds(t *testing.T) {
	p := newPending()
	old := migration("m0", "b", "u0", v1.MigrationSucceeded)
	running := migration("m1", "a", "u1", v1.MigrationRunning)
	succeeded := migration("m1", "a", "u1", v1.MigrationSucceeded)
	a, b := core.Key{Namespace: "ns", Name: "a"}, core.Key{Namespace: "ns", Name: "b"}
	tests := []struct {
		name   string
		now    time.Time
		listed []v1.VirtualMachineInstanceMigration
		want   map[core.Key]bool
	}{
		{"in flight", t0, []v1.VirtualMachineInstanceMigration{old, running}, nil},
		{"just succeeded", t0.Add(time.Second), []v1.VirtualMachineInstanceMigration{old, succeeded}, map[core.Key]bool{a: true}},
		{"still within the TTL", t0.Add(pendingTTL), []v1.VirtualMachineInstanceMigration{old, succeeded}, map[core.Key]bool{a: true}},
		{"past the TTL", t0.Add(pendingTTL + 2*time.Second), []v1.VirtualMachineInstanceMigration{old, succeeded}, nil},
	}
	for _, tt := range tests {
		_, gaps := view(p, tt.now, "launcher:v2", nil, tt.listed)
		if gaps.settling[a] != tt.want[a] || gaps.settling[b] {
			t.Fatalf("%s: settling %v, want %v", tt.name, gaps.settling, tt.want)
		}
	}
}

// A VMI that just moved for one upgrade is not held back from the next: its
// settling holds for the target it moved to only.
func TestSettlingEndsWithANewTarget(t *testing.T) {
	p := newPending()
	a := core.Key{Namespace: "ns", Name: "a"}
	view(p, t0, "launcher:v2", nil, []v1.VirtualMachineInstanceMigration{migration("m1", "a", "u1", v1.MigrationRunning)})
	_, gaps := view(p, t0.Add(time.Second), "launcher:v2", nil, []v1.VirtualMachineInstanceMigration{migration("m1", "a", "u1", v1.MigrationSucceeded)})
	if !gaps.settling[a] {
		t.Fatal("the VMI that just moved is not settling")
	}
	if _, gaps = view(p, t0.Add(2*time.Second), "launcher:v3", nil, []v1.VirtualMachineInstanceMigration{migration("m1", "a", "u1", v1.MigrationSucceeded)}); gaps.settling[a] {
		t.Fatal("the next upgrade's target waits for the last one's settling")
	}
}
