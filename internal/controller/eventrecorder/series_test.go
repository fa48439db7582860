package eventrecorder

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

var t0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

func vmiKey(name string) key {
	return key{eventType: "Normal", reason: "SuccessfulCreate", action: "CreateMigration",
		regarding: corev1.ObjectReference{Kind: "VirtualMachineInstance", Namespace: "vms", Name: name}}
}

// describe renders writes for comparison: "create a", "count a=3".
func describe(ws []write) []string {
	var out []string
	for _, w := range ws {
		if w.create {
			out = append(out, "create "+w.name)
		} else {
			out = append(out, fmt.Sprintf("count %s=%d", w.name, w.count))
		}
	}
	return out
}

func TestSeriesTable(t *testing.T) {
	type step struct {
		at      time.Duration
		observe string // a key's name; "" is a tick
		want    []string
	}
	cases := []struct {
		name     string
		capacity int
		steps    []step
		wantLen  int
	}{
		{name: "a new Event is created", capacity: 4, wantLen: 1,
			steps: []step{{0, "a", []string{"create a"}}}},
		{name: "the second occurrence starts the series at once, later ones wait for a tick", capacity: 4, wantLen: 1,
			steps: []step{
				{0, "a", []string{"create a"}},
				{time.Second, "a", []string{"count a=2"}},
				{2 * time.Second, "a", nil},
				{3 * time.Second, "a", nil},
				{time.Minute, "", nil},
				{5*time.Minute + 2*time.Second, "", []string{"count a=4"}},
				{5*time.Minute + 3*time.Second, "", nil},
			}},
		{name: "a series not observed for six minutes ends, writing a count the server lacks", capacity: 4, wantLen: 1,
			steps: []step{
				{0, "a", []string{"create a"}},
				{time.Second, "a", []string{"count a=2"}},
				{2 * time.Second, "a", nil},
				{6*time.Minute + 2*time.Second, "", []string{"count a=3"}},
				{6*time.Minute + 3*time.Second, "a", []string{"create a"}},
			}},
		{name: "a single Event ends without a write", capacity: 4, wantLen: 0,
			steps: []step{{0, "a", []string{"create a"}}, {6 * time.Minute, "", nil}}},
		{name: "a series still observed does not end", capacity: 4, wantLen: 1,
			steps: []step{
				{0, "a", []string{"create a"}},
				{5 * time.Minute, "a", []string{"count a=2"}},
				{10 * time.Minute, "", nil},
			}},
		{name: "at capacity the least recently observed series ends, with its count", capacity: 2, wantLen: 2,
			steps: []step{
				{0, "a", []string{"create a"}},
				{time.Second, "b", []string{"create b"}},
				{2 * time.Second, "a", []string{"count a=2"}},
				{3 * time.Second, "a", nil},
				{4 * time.Second, "c", []string{"create c"}}, // b ends: nothing to write
				{5 * time.Second, "d", []string{"count a=3", "create d"}},
				{6 * time.Second, "b", []string{"create b"}},
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tbl := newSeriesTable(c.capacity, finishAfter, flushEvery)
			for i, s := range c.steps {
				var got []write
				if s.observe == "" {
					got = tbl.tick(t0.Add(s.at))
				} else {
					got = tbl.observe(vmiKey(s.observe), s.observe, "vms", t0.Add(s.at))
				}
				if fmt.Sprint(describe(got)) != fmt.Sprint(s.want) {
					t.Fatalf("step %d (%v, %q): writes %v, want %v", i, s.at, s.observe, describe(got), s.want)
				}
			}
			if tbl.len() != c.wantLen {
				t.Errorf("%d series held, want %d", tbl.len(), c.wantLen)
			}
		})
	}
}

// A drain records one Event per VMI: 10,000 Events, every one created, never
// more than the capacity held.
func TestSeriesTableHoldsAtMostItsCapacity(t *testing.T) {
	tbl := newSeriesTable(Capacity, finishAfter, flushEvery)
	creates := 0
	for i := range 10000 {
		name := fmt.Sprintf("vmi-%05d", i)
		for _, w := range tbl.observe(vmiKey(name), name, "vms", t0.Add(time.Duration(i)*time.Millisecond)) {
			if !w.create {
				t.Fatalf("VMI %d: %v, want only creations (each Event occurs once)", i, describe([]write{w}))
			}
			creates++
		}
		if tbl.len() > Capacity {
			t.Fatalf("after %d Events the table holds %d series, capacity %d", i+1, tbl.len(), Capacity)
		}
	}
	if creates != 10000 || tbl.len() != Capacity || len(tbl.byKey) != Capacity {
		t.Errorf("%d creations, %d series held (%d by key); want 10000, %d", creates, tbl.len(), len(tbl.byKey), Capacity)
	}
}

func TestSeriesTableForget(t *testing.T) {
	tbl := newSeriesTable(4, finishAfter, flushEvery)
	tbl.observe(vmiKey("a"), "a", "vms", t0)
	tbl.forget(vmiKey("a"), "a")
	tbl.forget(vmiKey("never-seen"), "x")
	if got := describe(tbl.observe(vmiKey("a"), "a.2", "vms", t0.Add(time.Second))); fmt.Sprint(got) != "[create a.2]" {
		t.Errorf("after forget: %v, want a new Event", got)
	}
	// A failed write of the ended Event "a" must not drop its successor.
	tbl.forget(vmiKey("a"), "a")
	if got := describe(tbl.observe(vmiKey("a"), "a.3", "vms", t0.Add(2*time.Second))); fmt.Sprint(got) != "[count a.2=2]" {
		t.Errorf("after forgetting the ended Event: %v, want a.2's series to go on", got)
	}
	if tbl.len() != 1 {
		t.Errorf("%d series, want 1", tbl.len())
	}
}

// Events that differ only in their related object, type or action are
// different series.
func TestSeriesKeySeparatesWhatDiffers(t *testing.T) {
	tbl := newSeriesTable(8, finishAfter, flushEvery)
	base := vmiKey("a")
	warning, otherAction, withRelated := base, base, base
	warning.eventType = "Warning"
	otherAction.action = "Evict"
	withRelated.related = corev1.ObjectReference{Kind: "Pod", Name: "p"}
	for i, k := range []key{base, warning, otherAction, withRelated} {
		if got := tbl.observe(k, fmt.Sprint(i), "vms", t0); len(got) != 1 || !got[0].create {
			t.Errorf("key %d: %v, want a new Event", i, describe(got))
		}
	}
}
