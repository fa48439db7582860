package eventrecorder

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

type harness struct {
	t     *testing.T
	cs    *fake.Clientset
	clock *clocktesting.FakeClock
	r     *Recorder
	logs  *[]string
}

func newHarness(t *testing.T) *harness {
	var logs []string
	log := funcr.New(func(prefix, args string) { logs = append(logs, args) }, funcr.Options{})
	cs := fake.NewSimpleClientset()
	clk := clocktesting.NewFakeClock(t0)
	return &harness{t: t, cs: cs, clock: clk, logs: &logs,
		r: New(cs.EventsV1(), clientgoscheme.Scheme, "virt-operator", "virt-operator-node-1", clk, log)}
}

// drain makes the queued writes, as Start would.
func (h *harness) drain() {
	for {
		select {
		case j := <-h.r.queue:
			h.r.apply(context.Background(), j)
		default:
			return
		}
	}
}

func (h *harness) events() []eventsv1.Event {
	list, err := h.cs.EventsV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "vms", UID: types.UID("uid-" + name)}}
}

func TestRecorderCreatesTheEvent(t *testing.T) {
	h := newHarness(t)
	h.r.AnnotatedEventf(pod("launcher"), pod("target"), map[string]string{"a": "b"}, corev1.EventTypeNormal,
		"SuccessfulCreate", "CreateMigration", "Created migration %s", "m-1")
	h.drain()
	evs := h.events()
	if len(evs) != 1 {
		t.Fatalf("%d Events, want 1", len(evs))
	}
	e := evs[0]
	if e.Namespace != "vms" || !strings.HasPrefix(e.Name, "launcher.") || e.ReportingController != "virt-operator" ||
		e.ReportingInstance != "virt-operator-node-1" || e.Action != "CreateMigration" || e.Reason != "SuccessfulCreate" ||
		e.Type != "Normal" || e.Note != "Created migration m-1" || !e.EventTime.Time.Equal(t0) ||
		e.Regarding.Kind != "Pod" || e.Regarding.Name != "launcher" || e.Related == nil || e.Related.Name != "target" ||
		e.Annotations["a"] != "b" || e.Series != nil {
		t.Errorf("Event %+v", e)
	}
}

func TestRecorderCountsRepeatsOnOneEvent(t *testing.T) {
	h := newHarness(t)
	for i := range 4 {
		h.clock.SetTime(t0.Add(time.Duration(i) * time.Second))
		h.r.Eventf(pod("p"), nil, corev1.EventTypeWarning, "FailedEvict", "Evict", "no launcher pod")
		h.drain()
	}
	evs := h.events()
	if len(evs) != 1 || evs[0].Series == nil || evs[0].Series.Count != 2 {
		t.Fatalf("Events %+v, want one with a series of 2 (later counts wait for the flush)", evs)
	}
	h.clock.SetTime(t0.Add(flushEvery + 3*time.Second))
	h.r.tick()
	h.drain()
	evs = h.events()
	if s := evs[0].Series; s == nil || s.Count != 4 || !s.LastObservedTime.Time.Equal(t0.Add(3*time.Second)) {
		t.Errorf("series %+v, want 4 occurrences, the last at %v", s, t0.Add(3*time.Second))
	}
}

// Nothing the recorder holds grows with the number of distinct Events: the
// queue drops what it cannot hold (counted, logged once), the table stays at
// its capacity.
// Repeats about an object are one series though its version moved between
// them (the updater's Event on the KubeVirt CR, whose status it writes).
func TestRecorderCountsRepeatsAboutAChangingObject(t *testing.T) {
	h := newHarness(t)
	p := pod("p")
	for i := range 3 {
		p.ResourceVersion = fmt.Sprint(i + 1)
		h.clock.SetTime(t0.Add(time.Duration(i) * time.Second))
		h.r.Eventf(p, nil, corev1.EventTypeNormal, "SuccessfulCreate", "CreateMigrations", "Created migrations")
		h.drain()
	}
	if evs := h.events(); len(evs) != 1 || evs[0].Series == nil {
		t.Fatalf("Events %+v, want one with a series", evs)
	}
}

// A repeat that says something new is an Event of its own: a series keeps its
// first note, so a second crashed pod counted on the first one's Event would
// be invisible (the canary test's FailedUpdate naming the pod it failed on).
func TestRecorderKeepsADifferentNoteApart(t *testing.T) {
	h := newHarness(t)
	kv := pod("kv")
	for i, note := range []string{"pod virt-handler-a crashed", "pod virt-handler-b crashed"} {
		kv.ResourceVersion = fmt.Sprint(i + 1)
		h.clock.SetTime(t0.Add(time.Duration(i) * time.Second))
		h.r.Eventf(kv, nil, corev1.EventTypeWarning, "FailedUpdate", "Update", "%s", note)
		h.drain()
	}
	evs := h.events()
	if len(evs) != 2 || evs[0].Series != nil || evs[1].Series != nil {
		t.Fatalf("Events %+v, want two without a series", evs)
	}
	if notes := evs[0].Note + "|" + evs[1].Note; !strings.Contains(notes, "virt-handler-a") || !strings.Contains(notes, "virt-handler-b") {
		t.Errorf("notes %q, want both pods named", notes)
	}
}

func TestRecorderBoundsWhatItHolds(t *testing.T) {
	h := newHarness(t)
	for i := range QueueLength + 44 {
		h.r.Eventf(pod(fmt.Sprintf("p-%03d", i)), nil, corev1.EventTypeNormal, "SuccessfulCreate", "CreateMigration", "created")
	}
	if got := len(h.r.queue); got != QueueLength {
		t.Fatalf("%d writes queued, want the queue's length %d", got, QueueLength)
	}
	if got := h.r.series.len(); got != QueueLength {
		t.Errorf("%d series held, want %d (a dropped creation is forgotten)", got, QueueLength)
	}
	h.r.tick()
	if len(*h.logs) != 1 || !strings.Contains((*h.logs)[0], `"dropped"=44`) {
		t.Errorf("logs %q, want one line counting 44 dropped", *h.logs)
	}
	h.r.tick()
	if len(*h.logs) != 1 {
		t.Errorf("logs %q: the count is reported once", *h.logs)
	}
	h.drain()
	if got := len(h.events()); got != QueueLength {
		t.Errorf("%d Events written, want %d", got, QueueLength)
	}
}

func TestRecorderRefusesWhatItCannotRecord(t *testing.T) {
	h := newHarness(t)
	h.r.Eventf(pod("p"), nil, "Critical", "Reason", "Action", "note")
	type unregistered struct{ corev1.Pod }
	h.r.Eventf(&unregistered{}, nil, corev1.EventTypeNormal, "Reason", "Action", "note")
	h.drain()
	if n := len(h.events()); n != 0 {
		t.Errorf("%d Events, want none", n)
	}
	if len(*h.logs) != 2 || !strings.Contains((*h.logs)[0], `"type"="Critical"`) {
		t.Errorf("logs %q, want the unknown type and the missing reference named", *h.logs)
	}
}

func TestRecorderTruncatesALongNote(t *testing.T) {
	h := newHarness(t)
	h.r.Eventf(pod("p"), nil, corev1.EventTypeNormal, "Reason", "Action", "%s", strings.Repeat("é", 600))
	h.drain()
	note := h.events()[0].Note
	if len(note) > noteLimit || len(note) < noteLimit-1 || strings.ContainsRune(note, 0xFFFD) {
		t.Errorf("note of %d bytes, want at most %d and whole characters", len(note), noteLimit)
	}
}

// An Event the API server no longer has (expired, or its creation failed) is
// forgotten: the next occurrence creates a new one rather than patching a
// missing one forever.
func TestRecorderForgetsAnEventTheServerLacks(t *testing.T) {
	h := newHarness(t)
	h.r.Eventf(pod("p"), nil, corev1.EventTypeWarning, "FailedEvict", "Evict", "note")
	h.drain()
	first := h.events()[0].Name
	if err := h.cs.EventsV1().Events("vms").Delete(context.Background(), first, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(time.Second)
	h.r.Eventf(pod("p"), nil, corev1.EventTypeWarning, "FailedEvict", "Evict", "note") // patch: not found
	h.drain()
	h.clock.Step(time.Second)
	h.r.Eventf(pod("p"), nil, corev1.EventTypeWarning, "FailedEvict", "Evict", "note")
	h.drain()
	evs := h.events()
	if len(evs) != 1 || evs[0].Name == first || evs[0].Series != nil {
		t.Errorf("Events %+v, want one new Event", evs)
	}
	if len(*h.logs) != 0 {
		t.Errorf("logs %q: a missing Event is not an error", *h.logs)
	}
}

func TestRecorderLogsAFailedWrite(t *testing.T) {
	h := newHarness(t)
	h.cs.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(eventsv1.Resource("events"), "", errors.New("no"))
	})
	h.r.Eventf(pod("p"), nil, corev1.EventTypeNormal, "Reason", "Action", "note")
	h.drain()
	if len(*h.logs) != 1 || !strings.Contains((*h.logs)[0], "forbidden") {
		t.Errorf("logs %q, want the refused write", *h.logs)
	}
	if h.r.series.len() != 0 {
		t.Errorf("%d series held, want the refused one forgotten", h.r.series.len())
	}
}

// Start writes what was queued before it and ticks on its clock.
func TestRecorderStart(t *testing.T) {
	h := newHarness(t)
	h.r.Eventf(pod("p"), nil, corev1.EventTypeNormal, "Reason", "Action", "note")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- h.r.Start(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(h.events()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(h.events()); n != 1 {
		t.Errorf("%d Events after Start, want 1", n)
	}
	for !h.clock.HasWaiters() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	h.clock.Step(finishAfter + tickEvery)
	for h.r.seriesLen() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := h.r.seriesLen(); n != 0 {
		t.Errorf("%d series after the ticks, want the ended one gone", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start: %v", err)
	}
	if h.r.NeedLeaderElection() {
		t.Error("the recorder waits for leader election")
	}
}

func (r *Recorder) seriesLen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.series.len()
}
