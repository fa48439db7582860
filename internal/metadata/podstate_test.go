package metadata

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func podWith(phase corev1.PodPhase, statuses ...corev1.ContainerStatus) *corev1.Pod {
	return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ContainerStatuses: statuses}}
}

var (
	ready    = corev1.ContainerStatus{Name: "a", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	notReady = corev1.ContainerStatus{Name: "b", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
)

func TestPodIsReady(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"running, all ready", podWith(corev1.PodRunning, ready, ready), true},
		{"running, one not ready", podWith(corev1.PodRunning, ready, notReady), false},
		{"pending though ready", podWith(corev1.PodPending, ready), false},
		{"succeeded", podWith(corev1.PodSucceeded, ready), false},
		{"running without statuses yet", podWith(corev1.PodRunning), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodIsReady(tt.pod); got != tt.want {
				t.Errorf("PodIsReady = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPodIsCrashLooping(t *testing.T) {
	restarted := ready
	restarted.RestartCount = 1
	backoff := corev1.ContainerStatus{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: CrashLoopBackOff}}}
	creating := corev1.ContainerStatus{Name: "c", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
	terminated := corev1.ContainerStatus{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}
	lastTerminated := ready
	lastTerminated.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"healthy", podWith(corev1.PodRunning, ready, notReady), false},
		{"still creating", podWith(corev1.PodPending, creating), false},
		{"no statuses", podWith(corev1.PodPending), false},
		{"restarted once", podWith(corev1.PodRunning, ready, restarted), true},
		{"waiting in CrashLoopBackOff", podWith(corev1.PodRunning, backoff), true},
		{"terminated now", podWith(corev1.PodRunning, terminated), true},
		{"terminated before", podWith(corev1.PodRunning, lastTerminated), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodIsCrashLooping(tt.pod); got != tt.want {
				t.Errorf("PodIsCrashLooping = %v, want %v", got, tt.want)
			}
		})
	}
}
