// Package eventrecorder writes the operator's Kubernetes Events
// (events.k8s.io/v1, as controller-runtime's recorder does) with memory
// bounded by design: a fixed number of series remembered for deduplication and
// a fixed write queue, whatever the cluster's size. A drain records one Event
// per VMI; client-go's broadcaster would hold each of them for 6 to 12
// minutes.
package eventrecorder

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record/util"
	"k8s.io/client-go/tools/reference"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// The bounds. A series is kept as long as client-go keeps one (6 minutes
// after its last occurrence); the table and the queue cap what a burst holds.
const (
	Capacity    = 1024
	QueueLength = 256
	finishAfter = 6 * time.Minute
	flushEvery  = 5 * time.Minute
	tickEvery   = time.Minute
	// noteLimit is the API server's limit on an Event's note, in bytes.
	noteLimit = 1024
)

var _ recorder.EventRecorder = (*Recorder)(nil)

// Recorder is a recorder.EventRecorder; Start runs its writer (it is a
// manager.Runnable). Events recorded before Start wait in the queue.
type Recorder struct {
	client     eventsv1client.EventsGetter
	scheme     *runtime.Scheme
	controller string
	instance   string
	clock      clock.WithTicker
	log        logr.Logger

	queue   chan job
	dropped atomic.Int64

	mu     sync.Mutex
	series *seriesTable
}

// job is one write with, for a creation, the Event to create.
type job struct {
	write
	event *eventsv1.Event
}

// New returns a Recorder reporting as controller (the Events'
// reportingController) from instance (their reportingInstance).
func New(client eventsv1client.EventsGetter, scheme *runtime.Scheme, controller, instance string, clk clock.WithTicker, log logr.Logger) *Recorder {
	return &Recorder{client: client, scheme: scheme, controller: controller, instance: instance, clock: clk, log: log,
		queue: make(chan job, QueueLength), series: newSeriesTable(Capacity, finishAfter, flushEvery)}
}

// NewForConfig returns a Recorder writing through cfg, reporting as
// controller from controller-<hostname> (as client-go's recorder names its
// instance), on the real clock.
func NewForConfig(cfg *rest.Config, scheme *runtime.Scheme, controller string, log logr.Logger) (*Recorder, error) {
	client, err := eventsv1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the Events client: %w", err)
	}
	hostname, _ := os.Hostname()
	return New(client, scheme, controller, controller+"-"+hostname, clock.RealClock{}, log), nil
}

// Eventf records an Event about regarding (and related, if not nil).
func (r *Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.record(regarding, related, nil, eventtype, reason, action, fmt.Sprintf(note, args...))
}

// AnnotatedEventf is Eventf with annotations on the Event.
func (r *Recorder) AnnotatedEventf(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string, args ...any) {
	r.record(regarding, related, annotations, eventtype, reason, action, fmt.Sprintf(note, args...))
}

func (r *Recorder) record(regarding, related runtime.Object, annotations map[string]string, eventtype, reason, action, note string) {
	if !util.ValidateEventType(eventtype) {
		r.log.Error(nil, "not recording an Event of an unknown type", "type", eventtype, "reason", reason)
		return
	}
	ref, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		r.log.Error(err, "not recording an Event about an object without a reference", "reason", reason, "note", note)
		return
	}
	note = truncate(note, noteLimit)
	k := key{eventType: eventtype, reason: reason, action: action, note: note, regarding: identity(*ref)}
	var relatedRef *corev1.ObjectReference
	if related != nil {
		if relatedRef, err = reference.GetReference(r.scheme, related); err == nil {
			k.related = identity(*relatedRef)
		}
	}
	now := r.clock.Now()
	namespace := ref.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	name := util.GenerateEventName(ref.Name, now.UnixNano())
	r.mu.Lock()
	writes := r.series.observe(k, name, namespace, now)
	r.mu.Unlock()
	for _, w := range writes {
		j := job{write: w}
		if w.create {
			j.event = &eventsv1.Event{
				ObjectMeta:          metav1.ObjectMeta{Name: name, Namespace: namespace, Annotations: annotations},
				EventTime:           metav1.NewMicroTime(now),
				ReportingController: r.controller,
				ReportingInstance:   r.instance,
				Action:              action,
				Reason:              reason,
				Regarding:           *ref,
				Related:             relatedRef,
				Note:                note,
				Type:                eventtype,
			}
		}
		r.enqueue(j)
	}
}

// identity is the object a reference names, whatever its version: repeats
// about an object are one series though it changed between them (the
// KubeVirt CR's resourceVersion moves with every status write).
func identity(ref corev1.ObjectReference) corev1.ObjectReference {
	ref.ResourceVersion = ""
	return ref
}

// enqueue never blocks a reconcile: a full queue drops the write, counted
// and logged by the next tick.
func (r *Recorder) enqueue(j job) {
	select {
	case r.queue <- j:
	default:
		r.dropped.Add(1)
		if j.create {
			r.mu.Lock()
			r.series.forget(j.key, j.name)
			r.mu.Unlock()
		}
	}
}

// NeedLeaderElection is false: Events are written by whoever records them.
func (r *Recorder) NeedLeaderElection() bool { return false }

// Start writes the queued Events until ctx ends; writes still queued then are
// dropped, as client-go's broadcaster drops them at shutdown.
func (r *Recorder) Start(ctx context.Context) error {
	ticker := r.clock.NewTicker(tickEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case j := <-r.queue:
			r.apply(ctx, j)
		case <-ticker.C():
			r.tick()
		}
	}
}

// tick ends and flushes series, and reports the writes dropped since the last.
func (r *Recorder) tick() {
	r.mu.Lock()
	writes := r.series.tick(r.clock.Now())
	r.mu.Unlock()
	for _, w := range writes {
		r.enqueue(job{write: w})
	}
	if n := r.dropped.Swap(0); n > 0 {
		r.log.Info("Events dropped: the write queue was full", "dropped", n, "queueLength", QueueLength)
	}
}

// apply makes one write. An Event the API server does not take is logged and
// its series forgotten; nothing retries, as nothing waits on an Event.
func (r *Recorder) apply(ctx context.Context, j job) {
	events := r.client.Events(j.namespace)
	var err error
	if j.create {
		_, err = events.Create(ctx, j.event, metav1.CreateOptions{})
	} else {
		var patch []byte
		if patch, err = seriesPatch(j.count, j.lastObserved); err == nil {
			_, err = events.Patch(ctx, j.name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
	}
	if err == nil || apierrors.IsAlreadyExists(err) || ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	r.series.forget(j.key, j.name)
	r.mu.Unlock()
	if !apierrors.IsNotFound(err) {
		r.log.Error(err, "writing an Event", "namespace", j.namespace, "name", j.name, "reason", j.key.reason)
	}
}

// seriesPatch sets an Event's series: how often it occurred, and when last.
func seriesPatch(count int32, lastObserved time.Time) ([]byte, error) {
	return json.Marshal(map[string]any{"series": eventsv1.EventSeries{
		Count: count, LastObservedTime: metav1.NewMicroTime(lastObserved)}})
}

// truncate cuts s to at most limit bytes without splitting a character.
func truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	s = s[:limit]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
