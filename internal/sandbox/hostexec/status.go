package hostexec

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Result is how one container's host process ended.
type Result struct {
	Container  string
	ExitCode   int32
	Reason     string // Completed, Error, StartError, DeadlineExceeded, RunnerRestarted ...
	Message    string // for failures: the last line the process wrote to stderr
	StartedAt  metav1.Time
	FinishedAt metav1.Time
}

// Reasons of terminated container states written by the runner, besides Kubernetes'
// Completed and Error.
const (
	ReasonStartError       = "StartError" // the host program could not be started
	ReasonConfigError      = "CreateContainerConfigError"
	ReasonDeadlineExceeded = "DeadlineExceeded" // killed after the timeout
	ReasonRunnerRestarted  = "RunnerRestarted"  // found Running by a runner that did not start it
)

// SetRunning turns a bound Pending pod into a Running one, as a kubelet reports a
// started pod: phase Running, start time, host and pod IP (the process shares the
// host's network, so both are the node's address), conditions Initialized,
// PodReadyToStartContainers, ContainersReady and Ready True, and every container
// running and ready.
func SetRunning(pod *corev1.Pod, now metav1.Time, hostIP string) {
	st := &pod.Status
	st.Phase = corev1.PodRunning
	st.StartTime = &now
	if hostIP != "" {
		st.HostIP, st.PodIP = hostIP, hostIP
		st.HostIPs = []corev1.HostIP{{IP: hostIP}}
		st.PodIPs = []corev1.PodIP{{IP: hostIP}}
	}
	for _, t := range []corev1.PodConditionType{corev1.PodInitialized, corev1.PodReadyToStartContainers, corev1.ContainersReady, corev1.PodReady} {
		setCondition(st, t, corev1.ConditionTrue, "", "", now)
	}
	st.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name:    c.Name,
			Image:   c.Image,
			ImageID: c.Image,
			Ready:   true,
			Started: ptr.To(true),
			State:   corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
}

// SetTerminated records how the containers ended: phase Succeeded when every one
// exited 0, else Failed; Ready and ContainersReady False (PodCompleted); each listed
// container terminated with its exit code, reason and message. Containers without a
// Result keep their status.
func SetTerminated(pod *corev1.Pod, now metav1.Time, results []Result) {
	st := &pod.Status
	phase := corev1.PodSucceeded
	for _, r := range results {
		if r.ExitCode != 0 {
			phase = corev1.PodFailed
		}
	}
	st.Phase = phase
	if st.StartTime == nil {
		st.StartTime = &now
	}
	setCondition(st, corev1.PodReadyToStartContainers, corev1.ConditionFalse, "", "", now)
	setCondition(st, corev1.ContainersReady, corev1.ConditionFalse, "PodCompleted", "", now)
	setCondition(st, corev1.PodReady, corev1.ConditionFalse, "PodCompleted", "", now)
	for _, r := range results {
		cs := containerStatus(pod, r.Container)
		if cs == nil {
			continue
		}
		started := r.StartedAt
		if started.IsZero() && cs.State.Running != nil {
			started = cs.State.Running.StartedAt
		}
		cs.Ready, cs.Started = false, ptr.To(false)
		cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode:   r.ExitCode,
			Reason:     r.Reason,
			Message:    r.Message,
			StartedAt:  started,
			FinishedAt: r.FinishedAt,
		}}
	}
}

// containerStatus finds (or adds, from the spec) the status of container name.
func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image})
			return &pod.Status.ContainerStatuses[len(pod.Status.ContainerStatuses)-1]
		}
	}
	return nil
}

// setCondition sets a pod condition, keeping its transition time when the status
// does not change.
func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, status corev1.ConditionStatus, reason, message string, now metav1.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message = status, reason, message
		return
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: status, Reason: reason, Message: message, LastTransitionTime: now})
}

// RestartedResults are the results the runner records for a pod it finds Running
// without having started it: its process died with the previous runner.
func RestartedResults(pod *corev1.Pod, now metav1.Time) []Result {
	var rs []Result
	for _, c := range pod.Spec.Containers {
		rs = append(rs, Result{
			Container:  c.Name,
			ExitCode:   137,
			Reason:     ReasonRunnerRestarted,
			Message:    "runner restarted: the sandbox's host-exec runner stopped while this pod ran",
			FinishedAt: now,
		})
	}
	return rs
}
