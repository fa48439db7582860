package strategysource

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virt-operator/virt-operator/internal/diagnose"
)

const noSuchAccount = `Error creating: pods "virt-operator-install-strategy-abc-" is forbidden: error looking up service account kubevirt/virt-operator: serviceaccount "virt-operator" not found`

func jobPod(name string, mutate func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: name,
		Labels: map[string]string{batchv1.JobNameLabel: "virt-operator-install-strategy-abc"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	mutate(&p)
	return p
}

func jobEvent(name string, uid types.UID, reason, message string, at time.Time) corev1.Event {
	return corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: "Job", Name: "virt-operator-install-strategy-abc", UID: uid},
		Type:           corev1.EventTypeWarning, Reason: reason, Message: message, LastTimestamp: metav1.NewTime(at),
		Source: corev1.EventSource{Component: diagnose.JobController}}
}

func TestJobStartProblem(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-operator-install-strategy-abc", UID: "job-uid"}}
	unschedulable := jobPod("p1", func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}}
	})
	pullError := jobPod("p2", func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "install-strategy-upload",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "quay.io/kubevirt/virt-operator:v9"`}}}}
	})
	starting := jobPod("p3", func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "install-strategy-upload",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
	})
	failed := jobPod("p4", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		pods   []corev1.Pod
		events []corev1.Event
		want   string
	}{
		{"nothing yet", nil, nil, ""},
		{"a pod starting", []corev1.Pod{starting}, nil, ""},
		{"unschedulable", []corev1.Pod{unschedulable}, nil, "pod p1 cannot be scheduled: 0/3 nodes are available"},
		{"the image cannot be pulled", []corev1.Pod{pullError}, nil, `pod p2 cannot start container install-strategy-upload: ImagePullBackOff: Back-off pulling image "quay.io/kubevirt/virt-operator:v9"`},
		{"no pod, the Job controller refused: the latest refusal", []corev1.Pod{failed}, []corev1.Event{
			jobEvent("e2", "job-uid", "FailedCreate", noSuchAccount, t0.Add(time.Second)),
			jobEvent("e1", "job-uid", "FailedCreate", "an older refusal", t0),
		}, "Job virt-operator-install-strategy-abc cannot create its pod: " + noSuchAccount},
		{"another Job's refusal", nil, []corev1.Event{jobEvent("e1", "other-uid", "FailedCreate", noSuchAccount, t0)}, ""},
		{"a live pod outweighs an old refusal", []corev1.Pod{starting}, []corev1.Event{jobEvent("e1", "job-uid", "FailedCreate", noSuchAccount, t0)}, ""},
		{"not a refusal", nil, []corev1.Event{jobEvent("e1", "job-uid", "SuccessfulCreate", "Created pod", t0)}, ""},
		{"a refusal the Job controller did not report", nil, []corev1.Event{forged(jobEvent("e1", "job-uid", "FailedCreate", "forged", t0))}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := JobStartProblem(job, tc.pods, tc.events)
			if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// forged is an Event written by someone other than the Job controller.
func forged(ev corev1.Event) corev1.Event {
	ev.Source = corev1.EventSource{Component: "mallory"}
	return ev
}
