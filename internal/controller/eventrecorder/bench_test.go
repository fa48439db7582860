package eventrecorder

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

const drainEvents = 10000

// BenchmarkHeldAfterADrain is the heap a recorder still holds once a drain's
// 10,000 Events (one per VMI) are written: client-go's broadcaster, which
// controller-runtime's GetEventRecorder uses, against this package's.
func BenchmarkHeldAfterADrain(b *testing.B) {
	for _, c := range []struct {
		name  string
		start func(ctx context.Context, api discardEvents) recorder.EventRecorder
	}{
		{"client-go-broadcaster", func(ctx context.Context, api discardEvents) recorder.EventRecorder {
			br := events.NewBroadcaster(&events.EventSinkImpl{Interface: api})
			br.StartRecordingToSink(ctx.Done())
			return br.NewRecorder(clientgoscheme.Scheme, "virt-operator").(recorder.EventRecorder)
		}},
		{"eventrecorder", func(ctx context.Context, api discardEvents) recorder.EventRecorder {
			r := New(api, clientgoscheme.Scheme, "virt-operator", "virt-operator-bench", clock.RealClock{}, logr.Discard())
			go func() { _ = r.Start(ctx) }()
			return r
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var held uint64
			for b.Loop() {
				held += heldAfterDrain(b, c.start)
			}
			b.ReportMetric(float64(held)/float64(b.N), "held-bytes/op")
		})
	}
}

// heldAfterDrain records the drain's Events, waits until every write reached
// the API (one that keeps nothing), and returns the heap grown meanwhile.
func heldAfterDrain(b *testing.B, start func(context.Context, discardEvents) recorder.EventRecorder) uint64 {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	writes := &atomic.Int64{}
	before := heapInUse()
	rec := start(ctx, discardEvents{writes: writes})
	for i := range drainEvents {
		vmi := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "vms", Name: fmt.Sprintf("vmi-%05d", i), UID: types.UID(fmt.Sprint(i))}}
		rec.Eventf(vmi, nil, corev1.EventTypeNormal, "SuccessfulCreate", "CreateMigration", "Created migration kubevirt-workload-update-%05d", i)
		for int64(i+1)-writes.Load() > QueueLength/2 { // a drain's pace: the writer keeps up
			time.Sleep(100 * time.Microsecond)
		}
	}
	for writes.Load() < drainEvents {
		time.Sleep(time.Millisecond)
	}
	after := heapInUse()
	runtime.KeepAlive(rec)
	if after < before {
		return 0
	}
	return after - before
}

// discardEvents is an Events API that counts writes and keeps nothing (the
// fake clientset records every action, which would hide what a recorder
// holds); the methods a recorder does not call stay nil.
type discardEvents struct {
	eventsv1client.EventsV1Interface
	eventsv1client.EventInterface
	writes *atomic.Int64
}

func (d discardEvents) Events(string) eventsv1client.EventInterface { return d }

func (d discardEvents) Create(_ context.Context, e *eventsv1.Event, _ metav1.CreateOptions) (*eventsv1.Event, error) {
	d.writes.Add(1)
	return e, nil
}

func (d discardEvents) Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*eventsv1.Event, error) {
	d.writes.Add(1)
	return &eventsv1.Event{}, nil
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
