package vmsim

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func handlerPod(node, image string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "virt-handler-" + node, Labels: map[string]string{AppLabel: HandlerApp}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "virt-handler", Image: image}}}}
}

// A node refuses migrations while its virt-handler pod, not terminating,
// runs an image tagged -nomigrate.
func TestRefusingNodes(t *testing.T) {
	got := RefusingNodes([]corev1.Pod{
		handlerPod("node-a", "quay.io/kubevirt/virt-handler:v1.9.0-nomigrate"),
		handlerPod("node-b", "quay.io/kubevirt/virt-handler:v1.9.0"),
		handlerPod("node-c", "quay.io/kubevirt/virt-handler:v1.9.0-crashloop"),
		terminating(handlerPod("node-d", "quay.io/kubevirt/virt-handler:v1.9.0-nomigrate")),
	})
	if len(got) != 1 || !strings.Contains(got["node-a"], "virt-handler on node node-a (quay.io/kubevirt/virt-handler:v1.9.0-nomigrate) refuses migrations") {
		t.Fatalf("refusing %v, want node-a alone", got)
	}
}

// A migration into a refusing node fails once its target is known, saying
// why in both migration states; the VMI stays on its source pod and image,
// and the target pod goes. One from it, to another node, goes on.
func TestPlanMigrationIntoARefusingNode(t *testing.T) {
	running := newVMI("", runningOn(sourcePod), withMigrationState(started))
	refusing := map[string]string{"node-b": "virt-handler on node node-b refuses migrations"}
	p := planMigration(migrationInput{Migration: newMigration(v1.MigrationScheduled), VMI: running,
		Pods: []corev1.Pod{sourcePod, targetAt("node-b", corev1.PodRunning, t0)}, Image: imageV2, Duration: duration, Refusing: refusing, Now: t0})
	if p.Status == nil || p.Status.Phase != v1.MigrationFailed || p.Status.MigrationState.FailureReason != refusing["node-b"] {
		t.Fatalf("migration status %+v", p.Status)
	}
	wantFailedOnSource(t, p)
	if p.VMIStatus.MigrationState.FailureReason != refusing["node-b"] || !slices.Equal(p.DeletePods, []string{"target"}) {
		t.Fatalf("VMI migration state %+v, deletes %v", p.VMIStatus.MigrationState, p.DeletePods)
	}
	fromRefusing := map[string]string{"node-a": "refuses"}
	if p := planMigration(migrationInput{Migration: newMigration(v1.MigrationScheduled), VMI: running,
		Pods: []corev1.Pod{sourcePod, targetAt("node-b", corev1.PodRunning, t0)}, Image: imageV2, Duration: duration, Refusing: fromRefusing, Now: t0}); p.Status == nil || p.Status.Phase != v1.MigrationPreparingTarget {
		t.Fatalf("a migration out of a refusing node: %+v, want it to go on", p.Status)
	}
}

// A migration's addedNodeSelector goes onto its target pod, under the
// launcher's own selector.
func TestTargetPodHonoursAddedNodeSelector(t *testing.T) {
	m := newMigration("")
	m.Spec.AddedNodeSelector = map[string]string{corev1.LabelHostname: "node-c", kwokNodeLabel: "other"}
	p := planMigration(migrationInput{Migration: m, VMI: newVMI("", runningOn(sourcePod)), Pods: []corev1.Pod{sourcePod}, Image: imageV2, Now: t0})
	if p.CreatePod == nil || p.CreatePod.Spec.NodeSelector[corev1.LabelHostname] != "node-c" || p.CreatePod.Spec.NodeSelector[kwokNodeLabel] != kwokNodeLabelValue {
		t.Fatalf("target pod node selector %v", p.CreatePod.Spec.NodeSelector)
	}
}

// A podless migration pinned by hostname goes to that node, or fails when
// no other node has that name; one into a refusing node fails.
func TestPodlessMigrationTargets(t *testing.T) {
	source := newVMI("", func(vmi *v1.VirtualMachineInstance) {
		vmi.Status = *podlessRunning(vmi, "node-a", podlessPodUID(vmiUID), imageV1, now)
	})
	pinned := func(host string) *v1.VirtualMachineInstanceMigration {
		m := newMigration("")
		m.Spec.AddedNodeSelector = map[string]string{corev1.LabelHostname: host}
		return m
	}
	start := planPodlessMigration(migrationInput{Migration: pinned("node-c"), VMI: source, Image: imageV2, Duration: duration, Now: t0}, sandboxNodes)
	if start.VMIStatus == nil || start.VMIStatus.MigrationState.TargetNode != "node-c" {
		t.Fatalf("pinned to node-c: %+v", start.VMIStatus)
	}
	for _, host := range []string{"node-a", "node-z"} {
		if p := planPodlessMigration(migrationInput{Migration: pinned(host), VMI: source, Image: imageV2, Duration: duration, Now: t0}, sandboxNodes); p.Status == nil || p.Status.Phase != v1.MigrationFailed {
			t.Errorf("pinned to %s: %+v, want Failed", host, p.Status)
		}
	}
	migrating := source.DeepCopy()
	migrating.Status = *start.VMIStatus
	p := planPodlessMigration(migrationInput{Migration: newMigration(v1.MigrationRunning), VMI: migrating, Image: imageV2, Duration: duration,
		Refusing: map[string]string{"node-c": "refuses"}, Now: t0}, sandboxNodes)
	if p.Status == nil || p.Status.Phase != v1.MigrationFailed || p.VMIStatus == nil || p.VMIStatus.NodeName != "node-a" || p.VMIStatus.MigrationState.FailureReason != "refuses" {
		t.Fatalf("into a refusing node: %+v %+v", p.Status, p.VMIStatus)
	}
}
