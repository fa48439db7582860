package install_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/rollout"
)

// handlerWatch records, from watches of virt-handler's pods and DaemonSet,
// which nodes ever ran a virt-handler pod with a given image suffix and when
// the first such pod was Ready. Every change is seen, however short-lived
// (a poll could miss one), and at rest the watch reads nothing: the poll it
// replaces, twenty lists a second until the test ended, was half of a canary
// test's API requests.
type handlerWatch struct {
	mu         sync.Mutex
	nodes      map[string]bool
	firstReady time.Time
	// updatedBeforeCanaryReady counts pods on the new version seen before the
	// first one was Ready (the canary itself is one).
	updatedBeforeCanaryReady int
	// updatedBeforeFastStep is the most pods seen on the new version while the
	// DaemonSet had not yet been widened past maxUnavailable 1 (OnDelete or 1):
	// what the rollout let through before it switched to the fast step. The
	// widening reaches the DaemonSet's watch before any pod it lets through
	// exists (the DaemonSet controller acts on the same change), so a pod of
	// the fast step is not counted here.
	updatedBeforeFastStep int
	widened               bool
	strategies            []string
}

// watchHandler starts recording the rollout of virt-handler pods whose image
// ends in suffix; it returns once the watches have the current state, and
// they end with ctx or the test.
func (e *env) watchHandler(ctx context.Context, suffix string) *handlerWatch {
	e.t.Helper()
	w := &handlerWatch{nodes: map[string]bool{}}
	e.onHandlerChange(ctx, func(ds *appsv1.DaemonSet, pods []*corev1.Pod) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if ds != nil {
			s := rollout.StrategyString(ds.Spec.UpdateStrategy)
			if n := len(w.strategies); n == 0 || w.strategies[n-1] != s {
				w.strategies = append(w.strategies, s)
			}
			w.widened = w.widened || (s != "OnDelete" && s != "maxUnavailable 1")
		}
		updated := 0
		for _, p := range pods {
			if !strings.HasSuffix(p.Spec.Containers[0].Image, suffix) || p.Spec.NodeName == "" {
				continue
			}
			updated++
			w.nodes[p.Spec.NodeName] = true
			if w.firstReady.IsZero() && metadata.PodIsReady(p) {
				w.firstReady = time.Now()
			}
		}
		if w.firstReady.IsZero() && updated > w.updatedBeforeCanaryReady {
			w.updatedBeforeCanaryReady = updated
		}
		if !w.widened && updated > w.updatedBeforeFastStep {
			w.updatedBeforeFastStep = updated
		}
	})
	return w
}

// onHandlerChange calls seen with virt-handler's DaemonSet (nil while there is
// none) and pods, from watches of both: once with the state at the call, then
// after every change of either, one call at a time. It returns once the
// watches have the current state, and a stop that ends them (as do ctx and
// the end of the test).
func (e *env) onHandlerChange(ctx context.Context, seen func(*appsv1.DaemonSet, []*corev1.Pod)) (stop func()) {
	e.t.Helper()
	cs, err := kubernetes.NewForConfig(e.sb.RESTConfig())
	if err != nil {
		e.t.Fatal(err)
	}
	var (
		mu         sync.Mutex
		pods, sets toolscache.Store
	)
	call := func() {
		mu.Lock()
		defer mu.Unlock()
		var ds *appsv1.DaemonSet
		if obj, ok, _ := sets.GetByKey(namespace + "/virt-handler"); ok {
			ds = obj.(*appsv1.DaemonSet)
		}
		var ps []*corev1.Pod
		for _, obj := range pods.List() {
			ps = append(ps, obj.(*corev1.Pod))
		}
		seen(ds, ps)
	}
	onChange := toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { call() }, UpdateFunc: func(_, _ any) { call() }, DeleteFunc: func(any) { call() },
	}
	var podInformer, setInformer toolscache.Controller
	pods, podInformer = toolscache.NewInformerWithOptions(toolscache.InformerOptions{
		ListerWatcher: toolscache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "pods", namespace, func(o *metav1.ListOptions) {
			o.LabelSelector = metadata.AppLabel + "=virt-handler"
		}),
		ObjectType: &corev1.Pod{}, Handler: onChange,
	})
	sets, setInformer = toolscache.NewInformerWithOptions(toolscache.InformerOptions{
		ListerWatcher: toolscache.NewFilteredListWatchFromClient(cs.AppsV1().RESTClient(), "daemonsets", namespace, func(o *metav1.ListOptions) {
			o.FieldSelector = "metadata.name=virt-handler"
		}),
		ObjectType: &appsv1.DaemonSet{}, Handler: onChange,
	})
	ctx, cancel := context.WithCancel(ctx)
	var running sync.WaitGroup
	for _, informer := range []toolscache.Controller{podInformer, setInformer} {
		running.Go(func() { informer.RunWithContext(ctx) })
	}
	stop = func() { cancel(); running.Wait() }
	e.t.Cleanup(stop)
	if !toolscache.WaitForCacheSync(ctx.Done(), podInformer.HasSynced, setInformer.HasSynced) {
		e.t.Fatal("the virt-handler watches did not sync")
	}
	call()
	return stop
}

// failedUpdateSince is the note of a Warning FailedUpdate Event created after
// since that names a pod (its name starting with podPrefix) and its node, or "".
func (e *env) failedUpdateSince(since time.Time, podPrefix string) string {
	events := &eventsv1.EventList{}
	if err := e.c.List(context.Background(), events, client.InNamespace(namespace)); err != nil {
		e.t.Fatal(err)
	}
	for _, ev := range events.Items {
		if ev.Type == corev1.EventTypeWarning && ev.Reason == rollout.ReasonFailedUpdate && !ev.CreationTimestamp.Time.Before(since.Truncate(time.Second)) &&
			strings.Contains(ev.Note, "on node node-") && strings.Contains(ev.Note, "pod "+podPrefix) {
			return ev.Note
		}
	}
	return ""
}

// crashLoopTag is a version above v1.9.0 whose pods crash (the sandbox's
// pod-crashloop stage): an upgrade, so virt-handler goes first, through the
// canary. A tag at or below the running version (v1.9.0-crashloop is a
// pre-release of v1.9.0) takes upstream's rollback order, virt-api first.
const crashLoopTag = "v1.9.1-crashloop"

// A healthy upgrade holds at one canary pod until it has baked, then widens;
// a version whose pods crash seconds after Ready fails at the canary, is
// rolled back, and never reaches a second node.
func TestHandlerCanary(t *testing.T) {
	t.Parallel()
	e := startEnv(t, 20)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	e.createKubeVirt(v1.KubeVirtSpec{})
	first := e.waitAvailable(3 * time.Minute)

	t.Run("a healthy version: one canary pod, then the fast step, then done", func(t *testing.T) {
		w := e.watchHandler(ctx, ":v1.9.0")
		start := time.Now()
		e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0" })
		e.eventually("observed == target", 3*time.Minute, func() (bool, error) {
			kv := e.kubeVirt()
			return kv.Status.ObservedDeploymentID != first.Status.ObservedDeploymentID && kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID, nil
		})
		t.Logf("upgrade with canary on 20 nodes: %v", time.Since(start).Round(100*time.Millisecond))
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.updatedBeforeCanaryReady > 1 {
			t.Fatalf("%d pods ran the new version before the canary was Ready", w.updatedBeforeCanaryReady)
		}
		// React at once: the fast step starts when the canary has baked, not
		// after the DaemonSet has crept on one pod at a time (upstream let 22 go).
		if w.updatedBeforeFastStep > 1+2 {
			t.Fatalf("%d pods ran the new version before the rollout switched to the fast step, want at most canary+2", w.updatedBeforeFastStep)
		}
		t.Logf("pods on the new version before the fast step: %d", w.updatedBeforeFastStep)
		if len(w.nodes) != 20 {
			t.Fatalf("the new version reached %d of 20 nodes", len(w.nodes))
		}
		joined := strings.Join(w.strategies, " → ")
		if !strings.Contains(joined, "OnDelete") || !strings.Contains(joined, "10%") || !strings.HasPrefix(joined, "maxUnavailable 1 →") || !strings.HasSuffix(joined, "→ maxUnavailable 1") {
			t.Fatalf("update strategies seen: %s", joined)
		}
		t.Logf("strategies: %s", joined)
		if p := e.kubeVirt().Status.HandlerRollout; p == nil || p.Phase != string(rollout.PhaseSuccessful) {
			t.Fatalf("handlerRollout = %+v, want Successful", p)
		}
	})

	// Issue 15's sequence: v1.8.4, v1.9.0, then v1.9.0-crashloop, a pre-release of
	// the running version, so the rollback order (virt-api first) applies.
	t.Run("a crash-looping pre-release of the running version warns FailedUpdate naming the pod and node", func(t *testing.T) {
		start := time.Now().Add(-time.Second)
		w := e.watchHandler(ctx, "-crashloop")
		e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0-crashloop" })
		var warning string
		e.eventually("a Warning FailedUpdate naming the pod and node", 2*time.Minute, func() (bool, error) {
			warning = e.failedUpdateSince(start, "virt-")
			return warning != "", nil
		})
		t.Logf("warning: %s", warning)
		kv := e.kubeVirt()
		if !conditionTrue(kv, v1.KubeVirtConditionAvailable) || !conditionTrue(kv, v1.KubeVirtConditionDegraded) {
			t.Fatalf("want Available and Degraded, got %+v", kv.Status.Conditions)
		}
		if kv.Status.ObservedKubeVirtVersion != "v1.9.0" {
			t.Fatalf("observed version moved to %s", kv.Status.ObservedKubeVirtVersion)
		}
		// virt-handler's pods spread only through the operator's writes (its
		// DaemonSet widened, or pods deleted): with it leaving both alone, what
		// ran the bad version is all that ever will. (The CR itself keeps
		// being written while virt-api crash-loops.)
		e.waitOperatorQuiet(5*time.Second, time.Minute, "daemonsets", "pods")
		w.mu.Lock()
		nodes := len(w.nodes)
		w.mu.Unlock()
		if nodes > 1 {
			t.Fatalf("the bad version ran on %d nodes", nodes)
		}
		kv = e.kubeVirt()
		if p := kv.Status.HandlerRollout; p != nil && p.TargetID == kv.Status.TargetDeploymentID && p.Phase == string(rollout.PhaseFailed) &&
			e.failedUpdateSince(start, "virt-handler-") == "" {
			t.Fatalf("the canary failed (%s) without a Warning FailedUpdate naming the virt-handler pod", p.Message)
		}
		if p := kv.Status.HandlerRollout; p != nil {
			t.Logf("virt-handler rollout: %s (%s)", p.Phase, p.Message)
		}

		// The held rollout ends when the target changes: back to v1.9.0, healthy.
		e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0" })
		lastWhy := ""
		e.eventually("every Deployment off the crash-looping tag and ready, nothing Degraded", 2*time.Minute, func() (bool, error) {
			kv := e.kubeVirt()
			if kv.Status.ObservedDeploymentID != kv.Status.TargetDeploymentID || conditionTrue(kv, v1.KubeVirtConditionDegraded) {
				return false, nil
			}
			for _, d := range e.deployments() {
				st := d.Status
				if strings.HasSuffix(d.Spec.Template.Spec.Containers[0].Image, "-crashloop") || st.ObservedGeneration != d.Generation ||
					st.UpdatedReplicas != st.Replicas || st.ReadyReplicas != st.Replicas || st.Replicas != *d.Spec.Replicas {
					if why := fmt.Sprintf("%s: image %s, %+v", d.Name, d.Spec.Template.Spec.Containers[0].Image, st); why != lastWhy {
						t.Log(why)
						lastWhy = why
					}
					return false, nil
				}
			}
			return true, nil
		})
	})

	t.Run("a crash-looping version fails at the canary and is rolled back", func(t *testing.T) {
		before, start := e.kubeVirt(), time.Now().Add(-time.Second)
		w := e.watchHandler(ctx, "-crashloop")
		e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = crashLoopTag })
		e.eventually("the rollout Failed", 2*time.Minute, func() (bool, error) {
			kv := e.kubeVirt()
			p := kv.Status.HandlerRollout
			return kv.Status.TargetKubeVirtVersion == crashLoopTag && p != nil &&
				p.TargetID == kv.Status.TargetDeploymentID && p.Phase == string(rollout.PhaseFailed), nil
		})
		rolledBack := func() {
			e.eventually("virt-handler back on the previous version everywhere", 2*time.Minute, func() (bool, error) {
				ds := e.daemonSet("virt-handler")
				pods := &corev1.PodList{}
				if err := e.c.List(context.Background(), pods, client.InNamespace(namespace), client.MatchingLabels{metadata.AppLabel: "virt-handler"}); err != nil {
					return false, err
				}
				for _, p := range pods.Items {
					if strings.HasSuffix(p.Spec.Containers[0].Image, "-crashloop") {
						return false, nil
					}
				}
				st := ds.Status
				return strings.HasSuffix(ds.Spec.Template.Spec.Containers[0].Image, ":v1.9.0") && len(pods.Items) == 20 &&
					st.ObservedGeneration == ds.Generation && st.NumberReady == 20 && st.UpdatedNumberScheduled == 20, nil
			})
		}
		rolledBack()
		// Held at Failed, the operator comes to rest once its status has caught
		// up with the last Ready pod: neither the CR (the failure rewritten) nor
		// virt-handler (the bad version spreading again) keeps being written.
		e.waitOperatorQuiet(5*time.Second, time.Minute, "daemonsets", "kubevirts")
		w.mu.Lock()
		nodes := len(w.nodes)
		w.mu.Unlock()
		if nodes > 1 {
			t.Fatalf("the bad version ran on %d nodes", nodes)
		}
		kv := e.kubeVirt()
		if !conditionTrue(kv, v1.KubeVirtConditionAvailable) || !conditionTrue(kv, v1.KubeVirtConditionDegraded) {
			t.Fatalf("want Available and Degraded, got %+v", kv.Status.Conditions)
		}
		if d := condition(kv, v1.KubeVirtConditionDegraded); d == nil || d.Reason != "HandlerRolloutFailed" {
			t.Fatalf("Degraded does not say the handler rollout failed: %+v", d)
		}
		if kv.Status.ObservedKubeVirtVersion != before.Status.ObservedKubeVirtVersion {
			t.Fatalf("observed version moved to %s", kv.Status.ObservedKubeVirtVersion)
		}
		if e.failedUpdateSince(start, "virt-handler-") == "" {
			t.Fatal("no Warning event FailedUpdate naming the node and the virt-handler pod")
		}

		// A retry of the same target, without changing it: the canary runs again,
		// and fails again (the image still crashes); the request is used up.
		failedStart := kv.Status.HandlerRollout.StartedAt.Time
		retry := kv.DeepCopy()
		if retry.Annotations == nil {
			retry.Annotations = map[string]string{}
		}
		retry.Annotations[metadata.RetryHandlerRolloutAnnotation] = "now"
		if err := e.c.Patch(ctx, retry, client.MergeFrom(kv)); err != nil {
			t.Fatal(err)
		}
		e.eventually("the retried rollout failed again at its canary", 2*time.Minute, func() (bool, error) {
			kv := e.kubeVirt()
			p := kv.Status.HandlerRollout
			_, asked := kv.Annotations[metadata.RetryHandlerRolloutAnnotation]
			return !asked && p != nil && p.TargetID == kv.Status.TargetDeploymentID && p.Phase == string(rollout.PhaseFailed) &&
				p.StartedAt != nil && p.StartedAt.After(failedStart), nil
		})
		rolledBack()
	})

	t.Run("TLS flags the target drops are kept until the rollout has succeeded", func(t *testing.T) {
		// Back to the version that runs first: a customization of the failed
		// target would fail again.
		e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0" })
		e.eventually("the rollout at rest on v1.9.0", 2*time.Minute, func() (bool, error) {
			kv := e.kubeVirt()
			p := kv.Status.HandlerRollout
			return kv.Status.ObservedKubeVirtVersion == "v1.9.0" && kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID &&
				p != nil && p.TargetID == kv.Status.TargetDeploymentID && !rollout.Phase(p.Phase).Active() && p.Phase != string(rollout.PhaseFailed), nil
		})
		e.tlsCarryOver(t, "v1.9.1")
	})

	t.Run("status.history holds every deployment, newest first, with its stages' durations", func(t *testing.T) {
		h := e.kubeVirt().Status.History
		var summary []string
		for _, r := range h {
			line := fmt.Sprintf("%s→%s %s", r.FromVersion, r.ToVersion, r.Outcome)
			for _, p := range r.Phases {
				if p.Seconds != nil {
					line += fmt.Sprintf(" %s=%ds", p.Name, *p.Seconds)
				}
			}
			summary = append(summary, line)
		}
		t.Logf("history:\n  %s", strings.Join(summary, "\n  "))
		if len(h) < 4 || h[len(h)-1].FromVersion != "" || h[len(h)-1].Outcome != "Succeeded" {
			t.Fatalf("want the install last and at least three upgrades after it: %v", summary)
		}
		i := slices.IndexFunc(h, func(r v1.DeploymentRecord) bool {
			return r.FromVersion == "v1.8.4" && r.ToVersion == "v1.9.0" && r.Outcome == "Succeeded"
		})
		if i < 0 {
			t.Fatalf("no Succeeded v1.8.4→v1.9.0 upgrade: %v", summary)
		}
		up := h[i]
		canary := slices.IndexFunc(up.Phases, func(p v1.DeploymentPhase) bool { return p.Name == "VirtHandlerCanary" })
		if up.FinishedAt == nil || canary < 0 || up.Phases[canary].Seconds == nil || *up.Phases[canary].Seconds < 9 {
			t.Fatalf("the v1.9.0 upgrade's record lacks its end or a canary stage of at least the 10 s bake: %+v", up)
		}
		if !slices.ContainsFunc(h, func(r v1.DeploymentRecord) bool {
			return strings.Contains(r.ToVersion, "crashloop") && r.Outcome == "Failed" && r.LastProblem != ""
		}) {
			t.Fatalf("no crash-looping target's record is Failed with its problem: %v", summary)
		}
	})
}

// tlsCarryOver upgrades with a running virt-handler template that has a TLS
// flag the target lacks. The sandbox's strategies all have the same flags, so
// the running template gets one from a customization, which the upgrade's
// spec change drops. (An edit of the live DaemonSet would not do: the
// operator undoes edits made out of band, and whether it does so before the
// upgrade's first write is a race.)
func (e *env) tlsCarryOver(t *testing.T, imageTag string) {
	const flag = "--tls-min-version=1.2"
	ctx := context.Background()
	hasFlag := func(args []string) bool { return slices.Contains(args, flag) }
	e.updateSpec(func(s *v1.KubeVirtSpec) {
		s.CustomizeComponents.Patches = []v1.CustomizeComponentsPatch{{
			ResourceType: "DaemonSet", ResourceName: "virt-handler", Type: v1.JSONPatchType,
			Patch: `[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"` + flag + `"}]`,
		}}
	})
	e.eventually("virt-handler running the flag everywhere", 2*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		p := kv.Status.HandlerRollout
		if kv.Status.ObservedDeploymentID != kv.Status.TargetDeploymentID || p == nil || p.TargetID != kv.Status.TargetDeploymentID || rollout.Phase(p.Phase).Active() {
			return false, nil
		}
		ds := e.daemonSet("virt-handler")
		st := ds.Status
		return hasFlag(ds.Spec.Template.Spec.Containers[0].Args) && st.ObservedGeneration == ds.Generation &&
			st.UpdatedNumberScheduled == st.DesiredNumberScheduled && st.NumberReady == st.DesiredNumberScheduled, nil
	})
	cleanup := e.watchCleanup(t, hasFlag)

	e.updateSpec(func(s *v1.KubeVirtSpec) {
		s.ImageTag = imageTag
		s.CustomizeComponents.Patches = nil
	})
	e.eventually("the canary running the target with the flag kept", 2*time.Minute, func() (bool, error) {
		st := e.kubeVirt().Status.HandlerRollout
		if st == nil || st.Phase != string(rollout.PhaseCanary) || st.CanaryPod == "" {
			return false, nil
		}
		ds := e.daemonSet("virt-handler")
		if !strings.HasSuffix(ds.Spec.Template.Spec.Containers[0].Image, ":"+imageTag) {
			return false, nil
		}
		if !hasFlag(ds.Spec.Template.Spec.Containers[0].Args) || ds.Annotations[rollout.CarriedOverAnnotation] != rollout.CarriedTLSArgs {
			t.Fatalf("during the canary the template lost %s (args %v, annotations %v)", flag, ds.Spec.Template.Spec.Containers[0].Args, ds.Annotations)
		}
		pod := &corev1.Pod{}
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: st.CanaryPod}, pod); err != nil {
			return false, client.IgnoreNotFound(err) // the status may name a pod that is just being replaced
		}
		return hasFlag(pod.Spec.Containers[0].Args), nil
	})
	e.eventually("observed == target", 3*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		return kv.Status.ObservedKubeVirtVersion == imageTag && kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID, nil
	})
	ds := e.daemonSet("virt-handler")
	if hasFlag(ds.Spec.Template.Spec.Containers[0].Args) || ds.Annotations[rollout.CarriedOverAnnotation] != "" {
		t.Fatalf("after the rollout the template still carries %s (annotations %v)", flag, ds.Annotations)
	}
	pods := &corev1.PodList{}
	if err := e.c.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{metadata.AppLabel: "virt-handler"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if hasFlag(p.Spec.Containers[0].Args) && p.DeletionTimestamp == nil {
			t.Fatalf("pod %s still runs with %s once the target is observed", p.Name, flag)
		}
	}
	// The clean-up replaces every pod once more, at the fast step (the version
	// has proven itself on every node), then the DaemonSet is back at 1.
	seen := cleanup.stop()
	if len(seen) == 0 || slices.ContainsFunc(seen, func(s string) bool { return s != "maxUnavailable 10%" }) {
		t.Fatalf("update strategies while pods dropped %s: %v, want only the fast step", flag, seen)
	}
	if s := rollout.StrategyString(e.daemonSet("virt-handler").Spec.UpdateStrategy); s != "maxUnavailable 1" {
		t.Fatalf("after the clean-up the update strategy is %s, want maxUnavailable 1", s)
	}
	t.Logf("strategies during the clean-up: %v", seen)
}

// cleanupWatch records the virt-handler update strategies seen while the
// DaemonSet's template no longer has a carried-over setting and a pod still does.
type cleanupWatch struct {
	stopWatching func()
	mu           sync.Mutex
	seen         []string
}

func (e *env) watchCleanup(t *testing.T, carried func(args []string) bool) *cleanupWatch {
	w := &cleanupWatch{}
	w.stopWatching = e.onHandlerChange(t.Context(), func(ds *appsv1.DaemonSet, pods []*corev1.Pod) {
		if ds == nil || carried(ds.Spec.Template.Spec.Containers[0].Args) {
			return
		}
		cleaning := slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return p.DeletionTimestamp == nil && carried(p.Spec.Containers[0].Args) })
		w.mu.Lock()
		defer w.mu.Unlock()
		if s := rollout.StrategyString(ds.Spec.UpdateStrategy); cleaning && !slices.Contains(w.seen, s) {
			w.seen = append(w.seen, s)
		}
	})
	return w
}

func (w *cleanupWatch) stop() []string {
	w.stopWatching()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

// The operator SIGKILLed during the canary's bake resumes on the same canary
// node (it does not restart the canary), and killed again while the rollout
// widens, still converges.
func TestHandlerCanaryResumesAfterOperatorKill(t *testing.T) {
	t.Parallel()
	e := startEnvWithoutOperator(t, 8)
	p := &operatorProcess{t: t, kubeconfig: e.operatorKubeconfig()}
	p.start()
	t.Cleanup(p.kill)
	e.createKubeVirt(v1.KubeVirtSpec{HandlerRollout: &v1.HandlerRolloutPolicy{BakeTime: &v1.Duration{Duration: 25 * time.Second}}})
	first := e.waitAvailable(3 * time.Minute)

	e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0" })
	var canary *v1.HandlerRolloutStatus
	e.eventually("the canary baking", time.Minute, func() (bool, error) {
		canary = e.kubeVirt().Status.HandlerRollout
		return canary != nil && canary.Phase == string(rollout.PhaseCanary) && canary.CanaryNode != "", nil
	})
	p.kill()
	t.Logf("killed during the canary on %s", canary.CanaryNode)
	p.start()

	e.eventually("the rollout widening", 2*time.Minute, func() (bool, error) {
		st := e.kubeVirt().Status.HandlerRollout
		if st == nil {
			return false, nil
		}
		if st.CanaryNode != canary.CanaryNode {
			t.Fatalf("the canary moved from %s to %s after the restart", canary.CanaryNode, st.CanaryNode)
		}
		return st.Phase == string(rollout.PhaseIncreasing) || st.Phase == string(rollout.PhaseWaiting) || st.Phase == string(rollout.PhaseSuccessful), nil
	})
	p.kill()
	p.start()
	e.eventually("the upgrade to converge", 3*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		return kv.Status.ObservedDeploymentID != first.Status.ObservedDeploymentID &&
			kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID &&
			kv.Status.HandlerRollout != nil && kv.Status.HandlerRollout.Phase == string(rollout.PhaseSuccessful), nil
	})

	// Killed once the rollout has failed and rolled back: the restarted operator
	// holds at Failed; it neither retries the canary nor spreads the bad version.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := e.watchHandler(ctx, "-crashloop")
	e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = crashLoopTag })
	e.eventually("the rollout Failed", 2*time.Minute, func() (bool, error) {
		st := e.kubeVirt().Status.HandlerRollout
		return st != nil && st.Phase == string(rollout.PhaseFailed), nil
	})
	failed := e.kubeVirt().Status.HandlerRollout
	killed := e.leaseHolder()
	p.kill()
	p.start()
	// A retry would come from the restarted operator's first passes: once it
	// leads (the killed one's lease has run out) and has gone quiet, any
	// retried canary has been written, or shows in the status.
	e.eventually("the restarted operator leading", 2*time.Minute, func() (bool, error) {
		h := e.leaseHolder()
		return h != "" && h != killed, nil
	})
	e.waitOperatorQuiet(5*time.Second, time.Minute, "daemonsets", "kubevirts")
	st := e.kubeVirt().Status.HandlerRollout
	if st == nil || st.Phase != string(rollout.PhaseFailed) || st.CanaryNode != failed.CanaryNode {
		t.Fatalf("after a restart at Failed the rollout is %+v, want it held at Failed on %s", st, failed.CanaryNode)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.nodes) > 1 {
		t.Fatalf("the bad version ran on %d nodes across the restart", len(w.nodes))
	}
}
