package sandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/virt-operator/virt-operator/internal/sandbox"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
)

func clientFor(t *testing.T, s *sandbox.Sandbox) kubernetes.Interface {
	t.Helper()
	cfg := s.RESTConfig()
	cfg.QPS, cfg.Burst = 50, 100
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func labels(app string) map[string]string { return map[string]string{"app": app} }

func TestNodesDaemonSetAndStop(t *testing.T) {
	s := sandboxtest.Start(t, 20)
	c := clientFor(t, s)
	ctx := t.Context()

	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "type=kwok"})
	if err != nil {
		t.Fatal(err)
	}
	ready := 0
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	if len(nodes.Items) != 20 || ready != 20 {
		t.Fatalf("%d nodes, %d Ready; want 20", len(nodes.Items), ready)
	}

	start := time.Now()
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "ds", Namespace: "default"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels("ds")},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels("ds")},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example/ds:v1"}}},
			},
		},
	}
	if _, err := c.AppsV1().DaemonSets("default").Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Eventually(t, 60*time.Second, "DaemonSet with 20 ready pods", func() (bool, error) {
		got, err := c.AppsV1().DaemonSets("default").Get(ctx, "ds", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.Status.DesiredNumberScheduled == 20 && got.Status.NumberReady == 20, nil
	})
	t.Logf("DaemonSet ready on 20 nodes in %s", time.Since(start).Round(100*time.Millisecond))

	// Nodes added later continue the numbering and get their DaemonSet pods too.
	if err := s.CreateNodes(ctx, 2); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"node-020", "node-021"} {
		if _, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("after CreateNodes: %v", err)
		}
	}
	sandboxtest.Eventually(t, time.Minute, "DaemonSet with 22 ready pods", func() (bool, error) {
		got, err := c.AppsV1().DaemonSets("default").Get(ctx, "ds", metav1.GetOptions{})
		return err == nil && got.Status.NumberReady == 22, err
	})

	pids := sandboxtest.Pids(t, s.Dir)
	start = time.Now()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Stop took %s", time.Since(start).Round(100*time.Millisecond))
	for name, pid := range pids {
		if alive(pid) {
			t.Errorf("%s (pid %d) still alive after Stop", name, pid)
		}
	}
	if _, err := os.Stat(s.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists after Stop: %v", s.Dir, err)
	}
}

// alive: the pid exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	for i := len(stat) - 1; i >= 0; i-- {
		if stat[i] == ')' {
			return i+2 < len(stat) && stat[i+2] != 'Z'
		}
	}
	return true
}

func newPod(name, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
	}
}

// containerStatus is the status of p's container name, nil if it has none.
func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestCrashLoopInTwoSandboxes runs two sandboxes at once: a crash-looping pod next to
// a normal one in the first, a normal pod in the second, which must not see the
// first's pods.
func TestCrashLoopInTwoSandboxes(t *testing.T) {
	s1 := sandboxtest.Start(t, 2)
	s2 := sandboxtest.Start(t, 2)
	c1, c2 := clientFor(t, s1), clientFor(t, s2)
	ctx := t.Context()
	if s1.Kubeconfig() == s2.Kubeconfig() || s1.RESTConfig().Host == s2.RESTConfig().Host {
		t.Fatalf("sandboxes share %s / %s", s1.Kubeconfig(), s1.RESTConfig().Host)
	}

	crash, err := c1.CoreV1().Pods("default").Create(ctx, newPod("crash", "example/x:v1-crashloop"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c1.CoreV1().Pods("default").Create(ctx, newPod("normal", "example/x:v1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.CoreV1().Pods("default").Create(ctx, newPod("other", "example/x:v1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A pod of several images, one of them crash-looping (the operator's pre-pull
	// pod): the others keep their statuses through every crash.
	mixed := newPod("mixed", "example/x:v1-crashloop")
	mixed.Spec.Containers = append(mixed.Spec.Containers, corev1.Container{Name: "sidecar", Image: "example/y:v1"})
	if _, err := c1.CoreV1().Pods("default").Create(ctx, mixed, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	observeCrashLoop(ctx, t, c1, crash.ResourceVersion)

	normal, err := c1.CoreV1().Pods("default").Get(ctx, "normal", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !podReady(normal) || normal.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("normal pod: Ready %v, status %+v", podReady(normal), normal.Status.ContainerStatuses)
	}
	var mixedNow *corev1.Pod
	sandboxtest.Eventually(t, time.Minute, "the mixed pod's crash-looping container restarted twice", func() (bool, error) {
		p, err := c1.CoreV1().Pods("default").Get(ctx, "mixed", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		mixedNow = p
		main := containerStatus(p, "main")
		return main != nil && main.RestartCount >= 2, nil
	})
	if sc := containerStatus(mixedNow, "sidecar"); sc == nil || !sc.Ready || sc.State.Running == nil || sc.RestartCount != 0 {
		t.Errorf("the crash loop changed the sidecar's status: %+v", mixedNow.Status.ContainerStatuses)
	}
	sandboxtest.Eventually(t, time.Minute, "pod Ready in second sandbox", func() (bool, error) {
		p, err := c2.CoreV1().Pods("default").Get(ctx, "other", metav1.GetOptions{})
		return err == nil && podReady(p), err
	})
	pods, err := c2.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Errorf("second sandbox lists %d pods (%v), want only its own", len(pods.Items), err)
	}
}

// observeCrashLoop watches pod "crash" from its creation (resourceVersion
// created): Ready first, then Ready=False with CrashLoopBackOff, and
// restartCount rising by one at least twice more, never Ready again. A watch
// sees every status the pod went through, so a slow machine cannot make it
// miss a step; how long after Ready the crash came (kwok's stage delay) is
// logged, not checked.
func observeCrashLoop(ctx context.Context, t *testing.T, c kubernetes.Interface, created string) {
	t.Helper()
	var readyAt, crashedAt time.Time
	var counts []int32 // distinct restartCounts in the order seen
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	rv := created
	for ctx.Err() == nil {
		w, err := c.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=crash", ResourceVersion: rv})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			t.Fatal(err)
		}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				if ev.Type == watch.Error {
					t.Fatalf("watching the crash-looping pod: %v", apierrors.FromObject(ev.Object))
				}
				continue
			}
			rv = p.ResourceVersion
			ready := podReady(p)
			switch {
			case readyAt.IsZero():
				if ready {
					readyAt = time.Now()
				}
			case ready && !crashedAt.IsZero():
				t.Fatalf("crash-looping pod Ready again: %+v", p.Status)
			case !ready:
				cs := p.Status.ContainerStatuses[0]
				if cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" || cs.Ready {
					t.Fatalf("not Ready but not in CrashLoopBackOff: %+v", cs)
				}
				if crashedAt.IsZero() {
					crashedAt = time.Now()
					t.Logf("crashed %s after Ready (as the watch saw them)", crashedAt.Sub(readyAt).Round(100*time.Millisecond))
				}
				if n := len(counts); n == 0 || counts[n-1] != cs.RestartCount {
					if n > 0 && cs.RestartCount != counts[n-1]+1 {
						t.Errorf("restartCount went from %d to %d", counts[n-1], cs.RestartCount)
					}
					counts = append(counts, cs.RestartCount)
					t.Logf("restartCount %d at +%s", cs.RestartCount, time.Since(readyAt).Round(100*time.Millisecond))
				}
				if len(counts) >= 3 {
					w.Stop()
					return // the first crash and at least two further increments
				}
			}
		}
		w.Stop() // the API server ended the watch: resume where it stopped
	}
	t.Fatalf("crash loop not observed: Ready at %v, crashed at %v, restart counts %v", readyAt, crashedAt, counts)
}
