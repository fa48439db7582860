// Package diagnose says why a workload's pods do not run: a pod that cannot be
// scheduled or whose container cannot be pulled or created, and the refusals
// a workload controller (Job, DaemonSet, ReplicaSet) reports as FailedCreate
// Events when the API server refuses its pods. The pure parts take the pods
// and Events; Events reads them.
//
// Events are written by whoever may create Events in the namespace, so what
// they say can only make a message more precise: a decision (whether a
// rollout holds) never rests on an Event, and only the Events the named
// workload controller reports are believed.
package diagnose

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// ReasonFailedCreate is the Event reason of a workload controller whose pod
// the API server refused.
const ReasonFailedCreate = "FailedCreate"

// The workload controllers whose FailedCreate Events are read.
const (
	JobController       = "job-controller"
	DaemonSetController = "daemonset-controller"
)

// blockedWaitingReasons are the container states kubelet keeps a pod in when
// the container cannot be created; none of them ends without an admin.
var blockedWaitingReasons = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// PodStartProblem says why pod cannot start: it cannot be scheduled, or a
// container of it cannot be pulled or created. "" when neither holds.
func PodStartProblem(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return "cannot be scheduled: " + c.Message
		}
	}
	for _, cs := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && blockedWaitingReasons[w.Reason] {
			return fmt.Sprintf("cannot start container %s: %s: %s", cs.Name, w.Reason, w.Message)
		}
	}
	return ""
}

// LastFailedCreate is the message of the latest FailedCreate Warning that
// controller reported about the object with that UID (its pod refused by the
// API server); "" when there is none.
func LastFailedCreate(events []corev1.Event, uid types.UID, controller string) string {
	var refused []corev1.Event
	for _, ev := range events {
		if ev.InvolvedObject.UID == uid && ev.Type == corev1.EventTypeWarning && ev.Reason == ReasonFailedCreate && reportedBy(&ev, controller) {
			refused = append(refused, ev)
		}
	}
	if len(refused) == 0 {
		return ""
	}
	sort.Slice(refused, func(i, j int) bool { return EventTime(&refused[i]).Before(EventTime(&refused[j])) })
	return refused[len(refused)-1].Message
}

// reportedBy: the Event names controller as its source, in either API's field.
func reportedBy(ev *corev1.Event, controller string) bool {
	return ev.Source.Component == controller || ev.ReportingController == controller
}

// EventTime is when an Event last happened, whichever API wrote it.
func EventTime(ev *corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}

// Events lists the Events about obj (from r: the operator caches no Events),
// only those of reason when it is not empty. Events the operator may not read
// only make a message less precise: a Forbidden list is no Event.
func Events(ctx context.Context, r client.Reader, obj client.Object, reason string) ([]corev1.Event, error) {
	fields := client.MatchingFields{"involvedObject.uid": string(obj.GetUID())}
	if reason != "" {
		fields["reason"] = reason
	}
	events := &corev1.EventList{}
	err := r.List(ctx, events, client.InNamespace(obj.GetNamespace()), fields)
	switch {
	case apierrors.IsForbidden(err):
		log.FromContext(ctx).Info("cannot read Events", "object", obj.GetName(), "error", err.Error())
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("listing the Events of %s: %w", obj.GetName(), err)
	}
	return events.Items, nil
}
