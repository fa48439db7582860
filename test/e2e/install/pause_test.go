package install_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
)

// handlerPodsOn counts the virt-handler pods whose image has the tag.
func (e *env) handlerPodsOn(tag string) int {
	e.t.Helper()
	var pods corev1.PodList
	if err := e.c.List(context.Background(), &pods, client.InNamespace(namespace), client.MatchingLabels{"kubevirt.io": "virt-handler"}); err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && strings.HasSuffix(p.Spec.Containers[0].Image, ":"+tag) {
			n++
		}
	}
	return n
}

// handlerPodsSettled: no virt-handler pod is terminating or not Ready.
func (e *env) handlerPodsSettled() bool {
	e.t.Helper()
	var pods corev1.PodList
	if err := e.c.List(context.Background(), &pods, client.InNamespace(namespace), client.MatchingLabels{"kubevirt.io": "virt-handler"}); err != nil {
		e.t.Fatal(err)
	}
	for i := range pods.Items {
		if pods.Items[i].DeletionTimestamp != nil || !metadata.PodIsReady(&pods.Items[i]) {
			return false
		}
	}
	return true
}

// spec.paused before an upgrade starts nothing; paused in the fast step, no
// further virt-handler pod is updated; resumed, the upgrade completes.
func TestPausedUpgradeHoldsAndResumes(t *testing.T) {
	t.Parallel()
	const nodes = 16
	e := startEnv(t, nodes)
	one := intstr.FromInt32(1) // one pod at a time: a fast step slow enough to pause in
	e.createKubeVirt(v1.KubeVirtSpec{ImageTag: "v1.8.4",
		HandlerRollout: &v1.HandlerRolloutPolicy{FastStep: &one, BakeTime: &v1.Duration{Duration: 2 * time.Second}}})
	e.waitAvailable(3 * time.Minute)
	apiImage := e.deployment("virt-api").Spec.Template.Spec.Containers[0].Image

	e.updateSpec(func(s *v1.KubeVirtSpec) { s.Paused, s.ImageTag = true, "v1.9.0" })
	e.eventually("the upgrade held before its first step", time.Minute, func() (bool, error) {
		h := e.kubeVirt().Status.RolloutHold
		return h != nil && h.Reason == "Paused" && h.Step != "", nil
	})
	// The pass that held wrote this status after whatever it wrote to the
	// components; the passes after it (its own status write wakes one) have
	// had their say once the operator leaves them alone.
	e.waitOperatorQuiet(3*time.Second, time.Minute, "daemonsets", "deployments")
	kv := e.kubeVirt()
	if n := e.handlerPodsOn("v1.9.0"); n != 0 || e.deployment("virt-api").Spec.Template.Spec.Containers[0].Image != apiImage {
		t.Fatalf("a paused upgrade changed things: %d virt-handler pods on v1.9.0, virt-api %s", n, e.deployment("virt-api").Spec.Template.Spec.Containers[0].Image)
	}
	if c := condition(kv, v1.KubeVirtConditionProgressing); c == nil || c.Reason != "Paused" || !strings.Contains(c.Message, "held before "+kv.Status.RolloutHold.Step) {
		t.Fatalf("Progressing = %+v, want reason Paused naming the step", c)
	}
	t.Logf("held: %s", condition(kv, v1.KubeVirtConditionProgressing).Message)

	e.updateSpec(func(s *v1.KubeVirtSpec) { s.Paused = false })
	e.eventually("the fast step under way", 3*time.Minute, func() (bool, error) {
		h := e.kubeVirt().Status.HandlerRollout
		return h != nil && (h.Phase == "Increasing" || h.Phase == "Waiting"), nil
	})
	e.updateSpec(func(s *v1.KubeVirtSpec) { s.Paused = true })
	e.eventually("the rollout paused", time.Minute, func() (bool, error) {
		h := e.kubeVirt().Status.HandlerRollout
		return h != nil && h.Paused, nil
	})
	// Paused in the fast step, virt-handler is OnDelete: the pods being
	// replaced finish, and no other is replaced unless the operator deletes
	// one or widens the DaemonSet again. So once it has settled, the operator
	// leaving both alone is what "held" means: the passes the last pods'
	// events caused have decided, and a resync pass decides from the same
	// state (a pause stops every deadline).
	e.eventually("virt-handler settled on OnDelete", time.Minute, func() (bool, error) {
		ds := e.daemonSet("virt-handler")
		st := ds.Status
		return ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType && st.ObservedGeneration == ds.Generation &&
			st.CurrentNumberScheduled == st.DesiredNumberScheduled && st.NumberReady == st.DesiredNumberScheduled && e.handlerPodsSettled(), nil
	})
	held := e.handlerPodsOn("v1.9.0")
	e.waitOperatorQuiet(5*time.Second, time.Minute, "daemonsets", "pods")
	if n := e.handlerPodsOn("v1.9.0"); n != held || n == nodes {
		t.Fatalf("%d virt-handler pods on v1.9.0 once paused and quiet, %d when it settled (of %d)", n, held, nodes)
	}
	kv = e.kubeVirt()
	if d := condition(kv, v1.KubeVirtConditionDegraded); d != nil && strings.Contains(d.Message, "stuck") {
		t.Fatalf("a paused rollout is called stuck: %s", d.Message)
	}
	t.Logf("paused at %d of %d: %s", held, nodes, kv.Status.HandlerRollout.Message)

	watch := startStatusWatch(t, e)
	e.updateSpec(func(s *v1.KubeVirtSpec) { s.Paused = false })
	e.eventually("the upgrade done", 3*time.Minute, func() (bool, error) {
		watch.capture()
		kv := e.kubeVirt()
		return kv.Status.ObservedKubeVirtVersion == "v1.9.0" && kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID &&
			kv.Status.RolloutHold == nil, nil
	})
	if n := e.handlerPodsOn("v1.9.0"); n != nodes {
		t.Fatalf("%d of %d virt-handler pods on v1.9.0 after the resume", n, nodes)
	}
	if h := e.kubeVirt().Status.History; len(h) != 2 || h[0].Outcome != "Succeeded" || h[0].ToVersion != "v1.9.0" {
		t.Fatalf("history %+v", h)
	}
	watch.wait()
}

// statusWatch is `virt-operator status --watch` in a tmux pane: a terminal.
type statusWatch struct {
	t              *testing.T
	socket, result string
	bars           map[string]bool // distinct virt-handler lines seen
	last           string
}

func startStatusWatch(t *testing.T, e *env) *statusWatch {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Log("tmux is not installed: the status --watch check is skipped")
		return nil
	}
	dir := t.TempDir()
	w := &statusWatch{t: t, socket: filepath.Join(dir, "tmux.sock"), result: filepath.Join(dir, "exit"), bars: map[string]bool{}}
	cmd := fmt.Sprintf("%s status --watch --interval 300ms --kubeconfig %s --namespace %s; echo $? > %s; sleep 600",
		sandboxtest.OperatorBinary(t), e.sb.Kubeconfig(), namespace, w.result)
	if out, err := exec.Command("tmux", "-S", w.socket, "new-session", "-d", "-x", "200", "-y", "60", cmd).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", w.socket, "kill-server").Run() })
	return w
}

// capture reads the pane and records its virt-handler line.
func (w *statusWatch) capture() {
	if w == nil {
		return
	}
	out, err := exec.Command("tmux", "-S", w.socket, "capture-pane", "-p").Output()
	if err != nil {
		return
	}
	w.last = string(out)
	for _, l := range strings.Split(w.last, "\n") {
		if strings.Contains(l, "virt-handler") && strings.Contains(l, "[") {
			w.bars[strings.TrimSpace(l)] = true
		}
	}
}

// wait checks the bars moved and the watch exited 0 once the upgrade was done.
func (w *statusWatch) wait() {
	if w == nil {
		return
	}
	deadline := time.Now().Add(time.Minute)
	for {
		w.capture()
		if b, err := os.ReadFile(w.result); err == nil {
			if code := strings.TrimSpace(string(b)); code != "0" {
				w.t.Fatalf("status --watch exited %s; its screen:\n%s", code, w.last)
			}
			break
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("status --watch did not exit after the upgrade; its screen:\n%s", w.last)
		}
		time.Sleep(300 * time.Millisecond)
	}
	if len(w.bars) < 2 {
		w.t.Fatalf("the virt-handler bar never moved: %v", w.bars)
	}
	w.t.Logf("status --watch showed %d virt-handler lines and exited 0; its last screen:\n%s", len(w.bars), w.last)
}
