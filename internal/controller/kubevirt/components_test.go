package kubevirt

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/report"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/rollout"
)

var componentTarget = metadata.Target{ID: "target-id", Version: "v1.9.0-crashloop", Registry: "quay.io/kubevirt"}

// componentPod is a virt-api pod of the target (or not), restarted or not.
func componentPod(name string, onTarget bool, restarts int32) corev1.Pod {
	id := "observed-id"
	if onTarget {
		id = componentTarget.ID
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: name, Labels: map[string]string{"kubevirt.io": "virt-api"},
			Annotations: map[string]string{
				metadata.InstallStrategyIdentifierAnnotation: id,
				metadata.InstallStrategyVersionAnnotation:    componentTarget.Version,
				metadata.InstallStrategyRegistryAnnotation:   componentTarget.Registry,
			}},
		Spec:   corev1.PodSpec{NodeName: "node-000"},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "virt-api", RestartCount: restarts}}},
	}
}

func TestCrashLoopingPod(t *testing.T) {
	deleting := componentPod("virt-api-a", true, 3)
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		want string
	}{
		{"none crashes", []corev1.Pod{componentPod("virt-api-a", true, 0)}, ""},
		{"an old pod's restarts are not the target's", []corev1.Pod{componentPod("virt-api-a", false, 5)}, ""},
		{"a terminating pod is going anyway", []corev1.Pod{deleting}, ""},
		{"the first by name", []corev1.Pod{componentPod("virt-api-c", true, 1), componentPod("virt-api-b", true, 2)}, "virt-api-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod, c := crashLoopingPod(tc.pods, componentTarget)
			switch {
			case tc.want == "" && pod != nil:
				t.Errorf("got %s, want none", pod.Name)
			case tc.want != "" && (pod == nil || pod.Name != tc.want || c == nil || c.Name != "virt-api"):
				t.Errorf("got %v, want %s", pod, tc.want)
			}
		})
	}
}

func TestRollbackTemplate(t *testing.T) {
	tmpl := func(id string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{metadata.InstallStrategyIdentifierAnnotation: id}}}
	}
	id := func(p *corev1.PodTemplateSpec) string {
		if p == nil {
			return "<none>"
		}
		return p.Annotations[metadata.InstallStrategyIdentifierAnnotation]
	}
	for _, tc := range []struct {
		name             string
		newestFirst      []corev1.PodTemplateSpec
		target, observed string
		want             string
	}{
		{"the observed one", []corev1.PodTemplateSpec{tmpl("bad-2"), tmpl("observed")}, "bad-2", "observed", "observed"},
		{"never an earlier failed target while the observed is there", []corev1.PodTemplateSpec{tmpl("bad-2"), tmpl("bad-1"), tmpl("observed")}, "bad-2", "observed", "observed"},
		{"without the observed one, the newest that is not the target", []corev1.PodTemplateSpec{tmpl("bad-2"), tmpl("older")}, "bad-2", "observed", "older"},
		{"only the target's", []corev1.PodTemplateSpec{tmpl("bad-2")}, "bad-2", "observed", "<none>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := id(rollbackTemplate(tc.newestFirst, tc.target, tc.observed)); got != tc.want {
				t.Errorf("rolled back to %s, want %s", got, tc.want)
			}
		})
	}
}

func TestHandlerRolloutUnderway(t *testing.T) {
	for phase, want := range map[rollout.Phase]bool{
		rollout.PhaseStarted: true, rollout.PhaseCanary: true, rollout.PhaseIncreasing: true,
		rollout.PhaseSuccessful: false, rollout.PhaseFailed: false,
	} {
		s := &scope{cfg: &deployid.Config{ID: "t"}, kv: &v1.KubeVirt{Status: v1.KubeVirtStatus{
			HandlerRollout: &v1.HandlerRolloutStatus{Phase: string(phase), TargetID: "t"}}}}
		if got := handlerRolloutUnderway(s); got != want {
			t.Errorf("%s: %v, want %v", phase, got, want)
		}
		s.kv.Status.HandlerRollout.TargetID = "an earlier target"
		if handlerRolloutUnderway(s) {
			t.Errorf("%s of an earlier target counts as under way", phase)
		}
	}
}

// A rollback with no earlier template must not keep the failed one under a
// strategy that spreads it: it holds under OnDelete and says why.
func TestRollbackWithoutHistoryHolds(t *testing.T) {
	failed := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{metadata.InstallStrategyIdentifierAnnotation: "bad"}}}
	live := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: failed}}
	rolling := appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType}

	tmpl, strategy, held := rollbackWrite(live, nil, rolling)
	if !held || strategy.Type != appsv1.OnDeleteDaemonSetStrategyType || !equality.Semantic.DeepEqual(tmpl, failed) {
		t.Fatalf("no history: held %v, strategy %s, template %v; want held under OnDelete, the live template", held, strategy.Type, tmpl.Annotations)
	}
	previous := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{metadata.InstallStrategyIdentifierAnnotation: "good"}}}
	tmpl, strategy, held = rollbackWrite(live, &previous, rolling)
	if held || strategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || !equality.Semantic.DeepEqual(tmpl, previous) {
		t.Fatalf("with history: held %v, strategy %s, template %v; want the previous template under the decided strategy", held, strategy.Type, tmpl.Annotations)
	}
	msg := noRollbackMessage("pod p on node n crashed")
	if !strings.HasPrefix(msg, "pod p on node n crashed") ||
		!strings.Contains(msg, "holds (OnDelete)") || !strings.Contains(msg, "spec.imageTag") {
		t.Fatalf("message %q does not say what holds and what to do", msg)
	}
	if again := noRollbackMessage(noRollbackMessage("pod p on node n crashed")); again != msg {
		t.Fatalf("applied twice: %q", again)
	}
}

// A step whose Deployment's pods on the target crash says so, and warns once.
func TestFailingDeploymentWarnsOnce(t *testing.T) {
	scheme := testScheme(t)
	crashing, old := componentPod("virt-api-new", true, 2), componentPod("virt-api-old", false, 0)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&crashing, &old).Build()
	r := &Reconciler{Client: c}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-api"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubevirt.io": "virt-api"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: handlerMarks(componentTarget)}}}}
	step := apply.Step{Name: apply.StepVirtAPI, Objects: []client.Object{dep}}

	p, err := r.failingDeployment(context.Background(), step, nil)
	if err != nil || p == nil || p.Reason != ReasonComponentCrashLooping || p.Warning != rollout.ReasonFailedUpdate {
		t.Fatalf("problem %+v, %v", p, err)
	}
	for _, want := range []string{"deployment virt-api", "pod virt-api-new", "on node node-000", "container virt-api"} {
		if !strings.Contains(p.Message, want) {
			t.Errorf("%q lacks %q", p.Message, want)
		}
	}
	s := &scope{kv: &v1.KubeVirt{}, Report: report.Report{Problem: p}, now: time.Now()}
	next := nextStatus(s.kv.Status, s, "")
	warnings := func(prev v1.KubeVirtStatus) []kvEvent {
		var out []kvEvent
		for _, e := range eventsFor(prev, nextStatus(prev, s, ""), s, true) {
			if e.Type == eventWarning {
				out = append(out, e)
			}
		}
		return out
	}
	if w := warnings(s.kv.Status); len(w) != 1 || w[0].Reason != rollout.ReasonFailedUpdate || !strings.Contains(w[0].Message, "pod virt-api-new") {
		t.Errorf("first pass warnings %+v", w)
	}
	// Once Degraded says it, the next pass does not warn again.
	if w := warnings(next); len(w) != 0 {
		t.Errorf("warned again: %+v", w)
	}
}

// A Deployment whose ReplicaSet cannot create pods is named with the API
// server's refusal, before any pod exists to diagnose.
func TestFailingDeploymentNamesARefusedPodCreate(t *testing.T) {
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(testScheme(t)).Build()}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-api"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubevirt.io": "virt-api"}}}}
	live := dep.DeepCopy()
	const refusal = `pods "virt-api-5d9f-" is forbidden: no PriorityClass with name kubevirt-cluster-critical was found`
	live.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: refusal}}
	step := apply.Step{Name: apply.StepVirtAPI, Objects: []client.Object{dep}}
	p, err := r.failingDeployment(context.Background(), step, map[apply.ObjectRef]client.Object{apply.RefOf(dep): live})
	if err != nil || p == nil || p.Reason != ReasonComponentPodsNotCreated || !strings.Contains(p.Message, "deployment virt-api cannot create its pods: "+refusal) {
		t.Fatalf("problem %+v, %v", p, err)
	}
}

// A component pod on the target that cannot start is named: unschedulable,
// a container that cannot be pulled, or a node that is not Ready.
func TestNotStartingPod(t *testing.T) {
	pending := func(name string, mutate func(*corev1.Pod)) corev1.Pod {
		p := componentPod(name, true, 0)
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses = nil
		mutate(&p)
		return p
	}
	unschedulable := pending("virt-api-a", func(p *corev1.Pod) {
		p.Spec.NodeName = ""
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available"}}
	})
	pulling := pending("virt-api-b", func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "virt-api",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}}}
	})
	onNotReady := pending("virt-api-c", func(p *corev1.Pod) { p.Spec.NodeName = "node-9" })
	starting := pending("virt-api-d", func(*corev1.Pod) {})
	nodes := map[string]bool{"node-000": true, "node-9": false}
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		want string
	}{
		{"starting on a Ready node", []corev1.Pod{starting}, ""},
		{"running", []corev1.Pod{componentPod("virt-api-e", true, 0)}, ""},
		{"unschedulable", []corev1.Pod{unschedulable}, "virt-api-a cannot be scheduled: 0/3 nodes are available"},
		{"image not pulled", []corev1.Pod{pulling}, "virt-api-b cannot start container virt-api: ErrImagePull: not found"},
		{"on a node that is not Ready", []corev1.Pod{onNotReady}, "virt-api-c waits on node node-9, which is not Ready"},
	} {
		pod, problem := notStartingPod(tc.pods, componentTarget, nodes)
		got := ""
		if pod != nil {
			got = pod.Name + " " + problem
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The retry annotation restarts only a rollout that failed for this target,
// and is removed once honoured.
func TestRetryHandlerRollout(t *testing.T) {
	target := metadata.Target{Version: "v1.9.1", ID: "new"}
	annotated := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt",
		Annotations: map[string]string{metadata.RetryHandlerRolloutAnnotation: "now", "keep": "me"}}}
	for _, tc := range []struct {
		name  string
		kv    *v1.KubeVirt
		state *rollout.State
		want  bool
	}{
		{"failed for this target", annotated, &rollout.State{Phase: rollout.PhaseFailed, TargetID: "new"}, true},
		{"failed for an earlier target", annotated, &rollout.State{Phase: rollout.PhaseFailed, TargetID: "old"}, false},
		{"not failed", annotated, &rollout.State{Phase: rollout.PhaseCanary, TargetID: "new"}, false},
		{"no rollout", annotated, nil, false},
		{"not asked", &v1.KubeVirt{}, &rollout.State{Phase: rollout.PhaseFailed, TargetID: "new"}, false},
	} {
		if got := retryRequested(tc.kv, tc.state, target); got != tc.want {
			t.Errorf("%s: retry %v, want %v", tc.name, got, tc.want)
		}
	}

	scheme := testScheme(t)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(annotated.DeepCopy()).WithStatusSubresource(&v1.KubeVirt{}).Build()
	kv := &v1.KubeVirt{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(annotated), kv); err != nil {
		t.Fatal(err)
	}
	kv.Status.TargetDeploymentID = "computed in this pass"
	if err := (&Reconciler{Client: c}).clearRetryAnnotation(context.Background(), kv); err != nil {
		t.Fatal(err)
	}
	stored := &v1.KubeVirt{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(annotated), stored); err != nil {
		t.Fatal(err)
	}
	if _, left := stored.Annotations[metadata.RetryHandlerRolloutAnnotation]; left || stored.Annotations["keep"] != "me" {
		t.Fatalf("stored annotations %v: want the retry request gone, the rest kept", stored.Annotations)
	}
	if kv.Status.TargetDeploymentID != "computed in this pass" || kv.ResourceVersion != stored.ResourceVersion {
		t.Fatalf("in memory: status %q, resourceVersion %s (stored %s)", kv.Status.TargetDeploymentID, kv.ResourceVersion, stored.ResourceVersion)
	}
}
