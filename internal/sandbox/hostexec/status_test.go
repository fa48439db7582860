package hostexec

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func condition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func TestStatusTransitions(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(3 * time.Second))
	pod := &corev1.Pod{
		Spec: corev1.PodSpec{NodeName: "node-000", Containers: []corev1.Container{{Name: "a", Image: "img:a"}, {Name: "b", Image: "img:b"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Second))},
		}},
	}
	SetRunning(pod, t0, "10.255.0.1")
	st := pod.Status
	if st.Phase != corev1.PodRunning || st.PodIP != "10.255.0.1" || st.HostIP != "10.255.0.1" || len(st.PodIPs) != 1 || !st.StartTime.Equal(&t0) {
		t.Errorf("running status %+v", st)
	}
	for _, ct := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.PodReadyToStartContainers, corev1.ContainersReady, corev1.PodReady} {
		if c := condition(pod, ct); c == nil || c.Status != corev1.ConditionTrue {
			t.Errorf("condition %s: %+v", ct, c)
		}
	}
	if len(st.ContainerStatuses) != 2 || st.ContainerStatuses[1].State.Running == nil || !st.ContainerStatuses[1].Ready || st.ContainerStatuses[1].Image != "img:b" {
		t.Errorf("container statuses %+v", st.ContainerStatuses)
	}

	// One container fails: the pod fails, each container keeps its own outcome.
	running := pod.DeepCopy()
	SetTerminated(pod, t1, []Result{
		{Container: "a", ExitCode: 0, Reason: "Completed", FinishedAt: t1},
		{Container: "b", ExitCode: 2, Reason: "Error", Message: "virt-operator: boom", FinishedAt: t1},
	})
	if pod.Status.Phase != corev1.PodFailed {
		t.Errorf("phase %s", pod.Status.Phase)
	}
	if c := condition(pod, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Reason != "PodCompleted" || !c.LastTransitionTime.Equal(&t1) {
		t.Errorf("Ready %+v", c)
	}
	if c := condition(pod, corev1.PodScheduled); c.Status != corev1.ConditionTrue {
		t.Errorf("PodScheduled %+v", c)
	}
	b := pod.Status.ContainerStatuses[1].State.Terminated
	if b == nil || b.ExitCode != 2 || b.Message != "virt-operator: boom" || !b.StartedAt.Equal(&t0) || pod.Status.ContainerStatuses[1].Ready {
		t.Errorf("container b %+v", pod.Status.ContainerStatuses[1])
	}

	SetTerminated(running, t1, []Result{{Container: "a"}, {Container: "b"}})
	if running.Status.Phase != corev1.PodSucceeded {
		t.Errorf("all exit 0: phase %s", running.Status.Phase)
	}

	restarted := &corev1.Pod{Spec: pod.Spec}
	SetTerminated(restarted, t1, RestartedResults(restarted, t1))
	cs := restarted.Status.ContainerStatuses
	if restarted.Status.Phase != corev1.PodFailed || len(cs) != 2 || cs[0].State.Terminated.Reason != ReasonRunnerRestarted {
		t.Errorf("restarted: %+v", restarted.Status)
	}
}

func TestTailBuffer(t *testing.T) {
	var b tailBuffer
	if b.lastLine() != "" {
		t.Error("empty buffer has a line")
	}
	_, _ = b.Write([]byte("first\nError: unknown command \"x\""))
	_, _ = b.Write([]byte(" for \"virt-operator\"\n\n  \n"))
	if got := b.lastLine(); got != `Error: unknown command "x" for "virt-operator"` {
		t.Errorf("last line %q", got)
	}
	for range 3000 {
		_, _ = b.Write([]byte("0123456789\n"))
	}
	_, _ = b.Write([]byte("end"))
	if len(b.buf) > 2*tailKeep || b.lastLine() != "end" {
		t.Errorf("buffer %d bytes, last line %q", len(b.buf), b.lastLine())
	}
}
