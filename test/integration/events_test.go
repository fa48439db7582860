package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/controller/eventrecorder"
	"github.com/virt-operator/virt-operator/internal/operator"
)

// The API server takes the recorder's writes: the Event as created (a note
// past the server's limit cut to it), then its series when it repeats.
func TestEventRecorderWritesWhatTheAPIServerTakes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := createNamespace(t, ctx, "events")
	scheme, err := operator.NewScheme()
	must(t, err)
	rec, err := eventrecorder.NewForConfig(restConfig, scheme, "virt-operator", logr.Discard())
	must(t, err)
	go func() { _ = rec.Start(ctx) }()

	regarding := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "subject", Namespace: ns, UID: "0a1b"}}
	for range 2 { // a repeat: the same note (a different one is an Event of its own)
		rec.Eventf(regarding, nil, corev1.EventTypeWarning, "FailedEvict", "Evict", "%s", strings.Repeat("x", 3000))
	}

	var got eventsv1.Event
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		list := &eventsv1.EventList{}
		if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil || len(list.Items) == 0 {
			return false, err
		}
		got = list.Items[0]
		return len(list.Items) == 1 && got.Series != nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for one Event with a series: %v (last seen %+v)", err, got)
	}
	if got.Series.Count != 2 || len(got.Note) != 1024 || got.Regarding.Name != "subject" ||
		got.ReportingController != "virt-operator" || !strings.HasPrefix(got.ReportingInstance, "virt-operator-") {
		t.Errorf("Event %+v; want a series of 2, the note cut to 1024 bytes", got)
	}
}
