package kubevirt

import (
	"context"
	"fmt"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// ReasonStrategyJobBlocked: the install-strategy Job exists but its pod cannot
// start (refused, unschedulable, its image not pulled); nothing else would say so.
const ReasonStrategyJobBlocked = "InstallStrategyJobBlocked"

// jobCheckInterval is how often a running strategy Job is looked at while no
// strategy is usable: the Job controller's FailedCreate Events and a pod's
// scheduling change no object the operator watches.
const jobCheckInterval = 2 * time.Second

// blockedWaitingReasons are the container states kubelet keeps a pod in when
// the container cannot be created; none of them ends without an admin.
var blockedWaitingReasons = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// JobStartProblem says why a running strategy Job's pod does not run: a pod
// that cannot be scheduled, a container that cannot be pulled or created, or,
// with no pod at all, the Job controller's latest FailedCreate Event (a missing
// ServiceAccount, a quota, a policy). "" when nothing stops it.
func JobStartProblem(job *batchv1.Job, pods []corev1.Pod, events []corev1.Event) string {
	live := 0
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		live++
		if problem := podStartProblem(p); problem != "" {
			return fmt.Sprintf("pod %s %s", p.Name, problem)
		}
	}
	if live > 0 {
		return ""
	}
	if refused := lastFailedCreate(events, job.UID); refused != "" {
		return fmt.Sprintf("Job %s cannot create its pod: %s", job.Name, refused)
	}
	return ""
}

// reasonFailedCreate is the Event reason of a workload controller (Job,
// DaemonSet) whose pod the API server refused.
const reasonFailedCreate = "FailedCreate"

// lastFailedCreate is the message of the latest FailedCreate Warning about the
// object with that UID (a Job's, ReplicaSet's or DaemonSet's controller could
// not create a pod: the API server's refusal); "" when there is none.
func lastFailedCreate(events []corev1.Event, uid types.UID) string {
	var refused []corev1.Event
	for _, ev := range events {
		if ev.InvolvedObject.UID == uid && ev.Type == corev1.EventTypeWarning && ev.Reason == reasonFailedCreate {
			refused = append(refused, ev)
		}
	}
	if len(refused) == 0 {
		return ""
	}
	sort.Slice(refused, func(i, j int) bool { return eventTime(&refused[i]).Before(eventTime(&refused[j])) })
	return refused[len(refused)-1].Message
}

// podStartProblem says why pod cannot start: it cannot be scheduled, or a
// container of it cannot be pulled or created. "" when neither holds.
func podStartProblem(pod *corev1.Pod) string {
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

// eventTime is when an Event last happened, whichever API wrote it.
func eventTime(ev *corev1.Event) time.Time {
	switch {
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}

// strategyJobProblem reads what JobStartProblem needs: the Job's pods from the
// cache, its Events from the API.
func (r *Reconciler) strategyJobProblem(ctx context.Context, job *batchv1.Job) (string, error) {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return "", fmt.Errorf("listing the pods of strategy Job %s: %w", job.Name, err)
	}
	events, err := r.eventsAbout(ctx, job, "")
	if err != nil {
		return "", err
	}
	return JobStartProblem(job, pods.Items, events), nil
}

// eventsAbout lists the Events about obj from the API (the operator caches no
// Events), only those of reason when it is not empty. Events it may not read
// only make a message less precise.
func (r *Reconciler) eventsAbout(ctx context.Context, obj client.Object, reason string) ([]corev1.Event, error) {
	fields := client.MatchingFields{"involvedObject.uid": string(obj.GetUID())}
	if reason != "" {
		fields["reason"] = reason
	}
	events := &corev1.EventList{}
	err := r.APIReaderOrClient().List(ctx, events, client.InNamespace(obj.GetNamespace()), fields)
	switch {
	case apierrors.IsForbidden(err):
		log.FromContext(ctx).Info("cannot read Events", "object", obj.GetName(), "error", err.Error())
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("listing the Events of %s: %w", obj.GetName(), err)
	}
	return events.Items, nil
}
