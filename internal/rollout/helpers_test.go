package rollout

import (
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

var (
	t0     = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	oldTgt = metadata.Target{Version: "v1", Registry: "reg", ID: "old"}
	newTgt = metadata.Target{Version: "v2", Registry: "reg", ID: "new"}
)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func marks(t metadata.Target) map[string]string {
	return map[string]string{
		metadata.InstallStrategyVersionAnnotation:    t.Version,
		metadata.InstallStrategyRegistryAnnotation:   t.Registry,
		metadata.InstallStrategyIdentifierAnnotation: t.ID,
	}
}

// daemonSet is a live virt-handler DaemonSet rendered for t, observed by its controller.
func daemonSet(t metadata.Target, s *appsv1.DaemonSetUpdateStrategy, desired int32) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "virt-handler", Namespace: "kubevirt", Generation: 3, Annotations: marks(t)},
		Spec:       appsv1.DaemonSetSpec{UpdateStrategy: *s},
		Status:     appsv1.DaemonSetStatus{DesiredNumberScheduled: desired, ObservedGeneration: 3},
	}
	ds.Spec.Template.Annotations = marks(t)
	return ds
}

func fast() *appsv1.DaemonSetUpdateStrategy { return RollingUpdate(intstr.FromString("10%")) }

// podOpt tweaks a fake pod.
type podOpt func(*corev1.Pod)

// pod is a pod of t on node, created at t0 (the test rollout's start), Running and
// Ready since readyAt unless an option says otherwise.
func pod(node string, t metadata.Target, readyAt time.Time, opts ...podOpt) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "virt-handler-" + t.ID + "-" + node, Annotations: marks(t),
			CreationTimestamp: metav1.NewTime(t0)},
		Spec: corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readyAt)}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "virt-handler", Ready: true}}},
	}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func notReady(p *corev1.Pod) {
	p.Status.Conditions = nil
	p.Status.ContainerStatuses[0].Ready = false
}

func restarted(n int32) podOpt {
	return func(p *corev1.Pod) { p.Status.ContainerStatuses[0].RestartCount = n }
}

func createdAt(t time.Time) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t) }
}

func terminating(p *corev1.Pod) {
	ts := metav1.NewTime(t0)
	p.DeletionTimestamp = &ts
}

// pods is n ready pods of t on node-0.. (ready since t0-1h).
func pods(t metadata.Target, from, to int) []corev1.Pod {
	var out []corev1.Pod
	for i := from; i < to; i++ {
		out = append(out, pod(fmt.Sprintf("node-%d", i), t, t0.Add(-time.Hour)))
	}
	return out
}

func with(ps []corev1.Pod, more ...corev1.Pod) []corev1.Pod {
	return append(append([]corev1.Pod(nil), ps...), more...)
}

// state is a stored state whose last progress was its phase change, with
// counts no observation exceeds (so no pass counts as progress unless a test
// sets Updated and Ready).
func state(ph Phase, changed time.Time, canary ...string) *State {
	return &State{Phase: ph, TargetID: newTgt.ID, CanaryNodes: canary, StartedAt: t0, PhaseChangeAt: changed,
		ProgressAt: changed, Updated: math.MaxInt32, Ready: math.MaxInt32}
}
