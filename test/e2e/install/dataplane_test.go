package install_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/history"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/rollout"
	"github.com/virt-operator/virt-operator/internal/sandbox/vmsim"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// probeLabel selects the VMs the migration probe may move.
const probeLabel = "dataplane-probe"

// dataPlaneChecks is every check on: the canary node's VMIs, the canary pod,
// and the migration probe over the VMs labelled probeLabel=yes.
func dataPlaneChecks() *v1.HandlerDataPlaneChecks {
	return &v1.HandlerDataPlaneChecks{CanaryVMIs: true, CanaryPod: true, MigrationProbe: &v1.HandlerMigrationProbe{
		VMISelector: metav1.LabelSelector{MatchLabels: map[string]string{probeLabel: "yes"}}, Timeout: &v1.Duration{Duration: 2 * time.Minute}}}
}

// vmiUIDs is every VMI in vmNamespace by name: its UID, and whether it runs.
func (e *env) vmiUIDs() map[string]types.UID {
	e.t.Helper()
	var vmis v1.VirtualMachineInstanceList
	if err := e.c.List(context.Background(), &vmis, client.InNamespace(vmNamespace)); err != nil {
		e.t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, vmi := range vmis.Items {
		if vmi.Status.Phase == v1.VMIRunning {
			out[vmi.Name] = vmi.UID
		}
	}
	return out
}

// noVMLost fails unless every VMI of before still runs, the same VMI (UID).
func (e *env) noVMLost(before map[string]types.UID) {
	e.t.Helper()
	now := e.vmiUIDs()
	for name, uid := range before {
		if now[name] != uid {
			e.t.Errorf("VMI %s/%s (UID %s) no longer runs as the same VMI (now %q)", vmNamespace, name, uid, now[name])
		}
	}
}

// warningSince is the note of a Warning Event with reason, created at or
// after since, that contains every one of want; "" when none does.
func (e *env) warningSince(since time.Time, reason string, want ...string) string {
	e.t.Helper()
	events := &eventsv1.EventList{}
	if err := e.c.List(context.Background(), events, client.InNamespace(namespace)); err != nil {
		e.t.Fatal(err)
	}
	for _, ev := range events.Items {
		if ev.Type != corev1.EventTypeWarning || ev.Reason != reason || ev.CreationTimestamp.Time.Before(since.Truncate(time.Second)) {
			continue
		}
		if !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(ev.Note, w) }) {
			return ev.Note
		}
	}
	return ""
}

// probeMigrations are the migration probe's migrations in vmNamespace.
func (e *env) probeMigrations() []v1.VirtualMachineInstanceMigration {
	e.t.Helper()
	var list v1.VirtualMachineInstanceMigrationList
	if err := e.c.List(context.Background(), &list, client.InNamespace(vmNamespace), client.HasLabels{core.HandlerProbeLabel}); err != nil {
		e.t.Fatal(err)
	}
	return list.Items
}

// rolledBackTo waits until every virt-handler pod runs the tag, ready.
func (e *env) rolledBackTo(tag string, nodes int) {
	e.t.Helper()
	e.eventually("virt-handler back on "+tag+" everywhere", 3*time.Minute, func() (bool, error) {
		pods := &corev1.PodList{}
		if err := e.c.List(context.Background(), pods, client.InNamespace(namespace), client.MatchingLabels{metadata.AppLabel: "virt-handler"}); err != nil {
			return false, err
		}
		ready := 0
		for _, p := range pods.Items {
			if !strings.HasSuffix(p.Spec.Containers[0].Image, ":"+tag) {
				return false, nil
			}
			if metadata.PodIsReady(&p) && p.DeletionTimestamp == nil {
				ready++
			}
		}
		return ready == nodes, nil
	})
}

// Issue 42, on 10 nodes with VMs: a virt-handler that stays Ready but cannot
// take a live migration (the sandbox's -nomigrate tag) passes the bake and
// fails its migration probe: the rollout rolls back with only the canary node
// ever on the bad version, status, the Warning and the history naming the
// check, the VMI and the error, and no VM lost. The same upgrade to a healthy
// image passes the probe and widens, the probe's VMI ending on the canary
// node, on the target. Then a VMI on the canary node that fails during the
// bake rolls the next upgrade back.
func TestHandlerCanaryDataPlaneChecks(t *testing.T) {
	t.Parallel()
	const nodes = 10
	e := startEnv(t, nodes)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	// A short bake: what is judged here comes after it (the probe) or ends it
	// at once (a failed VMI, under a bake of its own below).
	e.createKubeVirt(v1.KubeVirtSpec{HandlerRollout: &v1.HandlerRolloutPolicy{DataPlaneChecks: dataPlaneChecks(),
		BakeTime: &v1.Duration{Duration: 2 * time.Second}}})
	kv := e.waitAvailable(3 * time.Minute)
	var nodeNames []string
	for i := range nodes {
		nodeNames = append(nodeNames, fmt.Sprintf("node-%03d", i))
	}
	// Two VMs a node, every one of them one the probe may move.
	e.runVMs(vmsim.CreateOptions{NamePrefix: "vm", Count: 2 * nodes, Nodes: nodeNames, Labels: map[string]string{probeLabel: "yes"}}, launcherImage(kv))
	before := e.vmiUIDs()
	if len(before) != 2*nodes {
		t.Fatalf("%d VMIs running, want %d", len(before), 2*nodes)
	}

	t.Run("a virt-handler that cannot take a migration fails its probe and is rolled back", func(t *testing.T) {
		const bad = "v1.9.0-nomigrate"
		start := time.Now().Add(-time.Second)
		w := e.watchHandler(ctx, "-nomigrate")
		e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = bad })
		var hr *v1.HandlerRolloutStatus
		e.eventually("the rollout Failed", 4*time.Minute, func() (bool, error) {
			kv := e.kubeVirt()
			hr = kv.Status.HandlerRollout
			return kv.Status.TargetKubeVirtVersion == bad && hr != nil && hr.TargetID == kv.Status.TargetDeploymentID && hr.Phase == string(rollout.PhaseFailed), nil
		})
		t.Logf("virt-handler rollout: %s", hr.Message)
		probe := hr.MigrationProbe
		if probe == nil || probe.Node != hr.CanaryNode {
			t.Fatalf("the probe's status %+v, want it on the canary node %s", probe, hr.CanaryNode)
		}
		check := hr.DataPlaneChecks[len(hr.DataPlaneChecks)-1]
		why := "refuses migrations into its node"
		if check.Name != string(rollout.CheckMigrationProbe) || check.State != string(rollout.CheckFailed) || check.VMI != probe.VMI ||
			!strings.Contains(check.Message, why) || !strings.Contains(hr.Message, "data-plane check MigrationProbe failed on VMI "+probe.VMI) {
			t.Fatalf("the failed check %+v, message %q: want MigrationProbe Failed on %s saying %q", check, hr.Message, probe.VMI, why)
		}
		var warning string
		e.eventually("a Warning naming the check, the VMI and the error", time.Minute, func() (bool, error) {
			warning = e.warningSince(start, rollout.ReasonDataPlaneCheckFailed, "MigrationProbe", probe.VMI, why)
			return warning != "", nil
		})
		e.rolledBackTo("v1.8.4", nodes)
		w.mu.Lock()
		ran := len(w.nodes)
		w.mu.Unlock()
		if ran > 1 {
			t.Fatalf("the bad version ran on %d nodes", ran)
		}
		kv := e.kubeVirt()
		if d := condition(kv, v1.KubeVirtConditionDegraded); d == nil || d.Reason != "HandlerRolloutFailed" || !strings.Contains(d.Message, probe.VMI) {
			t.Fatalf("Degraded %+v", d)
		}
		if i := slices.IndexFunc(kv.Status.History, func(r v1.DeploymentRecord) bool { return r.ToVersion == bad }); i < 0 ||
			kv.Status.History[i].Outcome != history.Failed || !strings.Contains(kv.Status.History[i].LastProblem, "data-plane check MigrationProbe failed on VMI "+probe.VMI) {
			t.Fatalf("no Failed history entry naming the check and VMI: %+v", kv.Status.History)
		}
		for _, m := range e.probeMigrations() {
			if !core.IsFinished(&m) {
				t.Errorf("probe migration %s left unfinished (%s)", m.Name, m.Status.Phase)
			}
		}
		e.noVMLost(before)
	})

	t.Run("a healthy version passes its probe and widens, the probe's VMI on the target", func(t *testing.T) {
		e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0" })
		e.eventually("observed == target", 4*time.Minute, func() (bool, error) {
			kv := e.kubeVirt()
			return kv.Status.ObservedKubeVirtVersion == "v1.9.0" && kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID, nil
		})
		kv := e.kubeVirt()
		hr := kv.Status.HandlerRollout
		if hr.Phase != string(rollout.PhaseSuccessful) || hr.MigrationProbe == nil {
			t.Fatalf("handlerRollout %+v", hr)
		}
		for _, c := range hr.DataPlaneChecks {
			if c.State != string(rollout.CheckPassed) {
				t.Errorf("check %s %s (%s), want Passed", c.Name, c.State, c.Message)
			}
			t.Logf("check %s: %s", c.Name, c.Message)
		}
		probe := hr.MigrationProbe
		vmi := &v1.VirtualMachineInstance{}
		ns, name, _ := strings.Cut(probe.VMI, "/")
		if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, vmi); err != nil {
			t.Fatal(err)
		}
		handler := e.handlerPods()[vmi.Status.NodeName]
		if vmi.Status.Phase != v1.VMIRunning || vmi.Status.NodeName != hr.CanaryNode || !strings.HasSuffix(handler.Spec.Containers[0].Image, ":v1.9.0") {
			t.Fatalf("the probe's VMI %s is %s on %s (virt-handler %s), want Running on the canary node %s, on v1.9.0",
				probe.VMI, vmi.Status.Phase, vmi.Status.NodeName, handler.Spec.Containers[0].Image, hr.CanaryNode)
		}
		moves := 0
		for _, m := range e.probeMigrations() {
			if m.Labels[core.HandlerProbeLabel] == rollout.ProbeKey(hr.TargetID, hr.StartedAt.Time) {
				moves++
				if m.Status.Phase != v1.MigrationSucceeded {
					t.Errorf("probe migration %s %s", m.Name, m.Status.Phase)
				}
			}
		}
		if moves != len(probe.Moves) {
			t.Errorf("%d probe migrations of this rollout, its status lists %d moves", moves, len(probe.Moves))
		}
		if i := slices.IndexFunc(kv.Status.History, func(r v1.DeploymentRecord) bool { return r.ToVersion == "v1.9.0" && r.Outcome == history.Succeeded }); i < 0 ||
			!slices.ContainsFunc(kv.Status.History[i].Phases, func(p v1.DeploymentPhase) bool { return p.Name == history.StageHandlerChecks && p.Seconds != nil }) {
			t.Fatalf("the upgrade's history lacks its data-plane checks stage: %+v", kv.Status.History)
		}
		e.noVMLost(before)
	})

	t.Run("a VMI on the canary node that fails during the bake rolls the upgrade back", func(t *testing.T) {
		w := e.watchHandler(ctx, ":v1.9.1")
		// A bake long enough for the test to fail a VMI within it; the failure is
		// judged at once, not at the bake's end.
		e.updateSpec(func(s *v1.KubeVirtSpec) {
			s.ImageTag = "v1.9.1"
			s.HandlerRollout.BakeTime = &v1.Duration{Duration: 3 * time.Minute}
		})
		var hr *v1.HandlerRolloutStatus
		e.eventually("the canary baking, its node's VMIs watched", 3*time.Minute, func() (bool, error) {
			kv := e.kubeVirt()
			hr = kv.Status.HandlerRollout
			return hr != nil && hr.TargetID == kv.Status.TargetDeploymentID && hr.Phase == string(rollout.PhaseCanary) && hr.CanaryPod != "" &&
				len(hr.CanaryVMIs) > 0, nil
		})
		victim := hr.CanaryVMIs[0]
		vmi := &v1.VirtualMachineInstance{}
		if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: victim.Namespace, Name: victim.Name}, vmi); err != nil {
			t.Fatal(err)
		}
		vmi.Status.Phase = v1.VMIFailed // as a virt-handler that killed its guest would report
		if err := e.c.Update(context.Background(), vmi); err != nil {
			t.Fatal(err)
		}
		e.eventually("the rollout Failed on the canary's VMI", 4*time.Minute, func() (bool, error) {
			kv := e.kubeVirt()
			hr = kv.Status.HandlerRollout
			return hr.TargetID == kv.Status.TargetDeploymentID && hr.Phase == string(rollout.PhaseFailed), nil
		})
		name := victim.Namespace + "/" + victim.Name
		// Within the bake: the checks that begin after it (CanaryPod) never began.
		pod := slices.IndexFunc(hr.DataPlaneChecks, func(c v1.HandlerDataPlaneCheck) bool { return c.Name == string(rollout.CheckCanaryPod) })
		if !strings.Contains(hr.Message, "data-plane check CanaryVMIs failed on VMI "+name) || pod < 0 || hr.DataPlaneChecks[pod].StartedAt != nil {
			t.Fatalf("failed: %q, checks %+v; want CanaryVMIs failed on %s during the bake", hr.Message, hr.DataPlaneChecks, name)
		}
		t.Logf("virt-handler rollout: %s", hr.Message)
		e.rolledBackTo("v1.9.0", nodes)
		w.mu.Lock()
		ran := len(w.nodes)
		w.mu.Unlock()
		if ran > 1 {
			t.Fatalf("v1.9.1 ran on %d nodes", ran)
		}
	})
}
