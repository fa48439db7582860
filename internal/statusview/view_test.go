package statusview

import (
	"math"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

var now = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

func ago(s int) *metav1.Time {
	t := metav1.NewTime(now.Add(-time.Duration(s) * time.Second))
	return &t
}

func TestBar(t *testing.T) {
	for _, c := range []struct {
		done, total int
		want        string
	}{
		{0, 10, "[....................] 0/10"},
		{5, 10, "[##########..........] 5/10"},
		{10, 10, "[####################] 10/10"},
		{12, 10, "[####################] 10/10"},
		{0, 0, "[....................] 0/0"},
		{-3, 10, "[....................] 0/10"},
		// Counts whose product with the bar's width overflows an int.
		{math.MaxInt / 2, math.MaxInt, "[#########...........] 4611686018427387903/9223372036854775807"},
		{math.MaxInt, math.MaxInt, "[####################] 9223372036854775807/9223372036854775807"},
		{math.MaxInt / 10, math.MaxInt, "[#...................] 922337203685477580/9223372036854775807"},
		{5e17, 5e17, "[####################] 500000000000000000/500000000000000000"},
	} {
		if got := Bar(c.done, c.total); got != c.want {
			t.Errorf("Bar(%d, %d) = %q, want %q", c.done, c.total, got, c.want)
		}
	}
}

func upgrading() *v1.KubeVirt {
	seconds := int64(3)
	return &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"},
		Status: v1.KubeVirtStatus{Phase: v1.KubeVirtPhaseDeployed,
			ObservedKubeVirtVersion: "v1.8.4", TargetKubeVirtVersion: "v1.9.0",
			ObservedDeploymentID: "aaaaaaaaaaaaaaaa", TargetDeploymentID: "bbbbbbbbbbbbbbbb",
			Conditions: []v1.KubeVirtCondition{{Type: v1.KubeVirtConditionReconciling, Status: "True"}, {Type: v1.KubeVirtConditionStalled, Status: "False"}},
			HandlerRollout: &v1.HandlerRolloutStatus{Phase: "Waiting", TargetID: "bbbbbbbbbbbbbbbb", DesiredPods: 20, UpdatedPods: 5, ReadyPods: 4,
				StartedAt: ago(50), CanaryNode: "node-003"},
			History: []v1.DeploymentRecord{
				{DeploymentID: "bbbbbbbbbbbbbbbb", FromVersion: "v1.8.4", ToVersion: "v1.9.0", ChangedKeys: []string{"kubeVirtVersion"},
					StartedAt: *ago(60), Outcome: "InProgress", Phases: []v1.DeploymentPhase{{Name: "InstallStrategy", StartedAt: *ago(60), Seconds: &seconds}, {Name: "VirtHandlerRollout", StartedAt: *ago(57)}}},
				{DeploymentID: "aaaaaaaaaaaaaaaa", ToVersion: "v1.8.4", StartedAt: *ago(600), FinishedAt: ago(590), Outcome: "Succeeded"},
			}}}
}

func TestRenderAnUpgrade(t *testing.T) {
	replicas := int32(2)
	dep := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "virt-api"}, Spec: appsv1.DeploymentSpec{Replicas: &replicas,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: "quay.io/kubevirt/virt-api:v1.8.4"}}}}},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 2}}
	ds := appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "virt-handler"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: "quay.io/kubevirt/virt-handler:v1.9.0"}}}}}}
	screen := Render(Snapshot{KubeVirt: upgrading(), Deployments: []appsv1.Deployment{dep}, DaemonSets: []appsv1.DaemonSet{ds}, Now: now})
	for _, want := range []string{
		"KubeVirt kubevirt/kubevirt  phase Deployed  Reconciling",
		"Version   v1.8.4 -> v1.9.0 (deployment aaaaaaaaaaaa -> bbbbbbbbbbbb)",
		"Changed   kubeVirtVersion",
		"virt-api                           2/2 ready  v1.8.4",
		"virt-handler                       Waiting [#####...............] 5/20 updated, 4 ready  v1.9.0  ETA 2m30s  canary node-003",
		"v1.8.4 -> v1.9.0  InProgress for 1m0s",
		"InstallStrategy 3s, VirtHandlerRollout ...",
		"- -> v1.8.4  Succeeded in 10s",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the screen lacks %q:\n%s", want, screen)
		}
	}
	if Done(upgrading()) || Degraded(upgrading()) {
		t.Fatal("an upgrade under way is neither done nor degraded")
	}
}

func TestRenderWorkloadUpdatesAndDone(t *testing.T) {
	kv := upgrading()
	kv.Status.ObservedDeploymentID, kv.Status.ObservedKubeVirtVersion = kv.Status.TargetDeploymentID, "v1.9.0"
	kv.Status.History[0].FinishedAt, kv.Status.History[0].Outcome = ago(30), "Succeeded"
	kv.Status.WorkloadUpdates = &v1.WorkloadUpdatesStatus{DeploymentID: kv.Status.TargetDeploymentID, Actor: v1.ActorVirtOperator,
		Outdated: 32, MigrationsInFlight: 2, WaitingForMigration: 28, MigrationsCreated: 10, NeedsAttention: 1, NeedsAttentionVMIs: []string{"ns/vm"},
		Choices: &v1.WorkloadUpdateChoices{LiveMigrate: 29, Leave: 2, Invalid: 0}}
	screen := Render(Snapshot{KubeVirt: kv, Now: now})
	for _, want := range []string{"Workload updates (virt-operator)", "[#####...............] 10/40 moved", "2 left alone by their choice",
		"1 need attention (ns/vm)", "ETA 1m27s"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the screen lacks %q:\n%s", want, screen)
		}
	}
	if Done(kv) {
		t.Fatal("done while 29 VMIs wait")
	}
	kv.Status.WorkloadUpdates.Outdated, kv.Status.WorkloadUpdates.MigrationsInFlight = 3, 0 // 2 left alone + 1 needing attention
	if !Done(kv) {
		t.Fatal("not done with only the VMIs no one moves left")
	}
	kv.Status.WorkloadUpdates.Outdated, kv.Status.WorkloadUpdates.NotMovable = 4, 1
	kv.Status.WorkloadUpdates.NotMovableVMIs = []string{"ns/solo: no other schedulable node"}
	if !Done(kv) || !strings.Contains(Render(Snapshot{KubeVirt: kv, Now: now}), "1 not movable (ns/solo: no other schedulable node)") {
		t.Fatalf("a VMI no node can take: done %v, screen:\n%s", Done(kv), Render(Snapshot{KubeVirt: kv, Now: now}))
	}
	kv.Status.WorkloadUpdates.Actor = v1.ActorVirtController
	if Done(kv) {
		t.Fatal("done without virt-controller's count")
	}
	zero := 0
	kv.Status.OutdatedVirtualMachineInstanceWorkloads = &zero
	if !Done(kv) || !strings.Contains(Render(Snapshot{KubeVirt: kv, Now: now}), "virt-controller moves the VMs") {
		t.Fatal("virt-controller's drain")
	}
}

func TestDegraded(t *testing.T) {
	kv := upgrading()
	kv.Status.Conditions = []v1.KubeVirtCondition{{Type: v1.KubeVirtConditionStalled, Status: "True", Reason: "X"},
		{Type: v1.KubeVirtConditionDegraded, Status: "True", Reason: "HandlerRolloutFailed", Message: "canary crashed"}}
	if !Degraded(kv) || !strings.Contains(Render(Snapshot{KubeVirt: kv, Now: now}), "PROBLEM   HandlerRolloutFailed: canary crashed") {
		t.Fatal("a stalled CR")
	}
	// An older operator's CR: upstream's Degraded during an update is not a problem.
	kv.Status.Conditions = []v1.KubeVirtCondition{{Type: v1.KubeVirtConditionDegraded, Status: "True", Reason: "UpdateInProgress"}}
	if Degraded(kv) {
		t.Fatal("upstream's update-in-progress Degraded")
	}
}

func TestRenderMigrationWaits(t *testing.T) {
	ds := appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "virt-handler"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: "quay.io/kubevirt/virt-handler:v1.9.0"}}}}}}
	in := func(s int) metav1.Time { return metav1.NewTime(now.Add(time.Duration(s) * time.Second)) }
	const indent = "                                     " // under the state column
	for _, c := range []struct {
		name  string
		waits []v1.HandlerMigrationWait
		count int32
		want  string // the line under virt-handler's; "" for none
	}{
		{name: "no wait"},
		{name: "one wait", count: 1,
			waits: []v1.HandlerMigrationWait{{Node: "node-004", Migration: "default/vm-7-migration", Until: in(245)}},
			want:  "1 node waits for a live migration: node-004 (default/vm-7-migration, until 12:04:05Z)"},
		{name: "more waits than listed", count: 3,
			waits: []v1.HandlerMigrationWait{{Node: "node-004", Migration: "default/vm-7-migration", Until: in(245)},
				{Node: "node-011", Migration: "prod/db-0-migration", Until: in(590)}},
			want: "3 nodes wait for live migrations: node-004 (default/vm-7-migration, until 12:04:05Z), node-011 (prod/db-0-migration, until 12:09:50Z), +1 more"},
		{name: "until past", count: 2,
			waits: []v1.HandlerMigrationWait{{Node: "node-001", Migration: "default/old-migration", Until: in(-5)},
				{Node: "node-002", Migration: "default/old-migration", Until: in(0)}},
			want: "2 nodes wait for live migrations: node-001 (default/old-migration, expired), node-002 (default/old-migration, expired)"},
		{name: "until another day", count: 1,
			waits: []v1.HandlerMigrationWait{{Node: "node-004", Migration: "default/long-migration", Until: in(13 * 3600)}},
			want:  "1 node waits for a live migration: node-004 (default/long-migration, until 2026-07-02T01:00:00Z)"},
		{name: "a count without entries", count: 2, want: "2 nodes wait for live migrations"},
	} {
		t.Run(c.name, func(t *testing.T) {
			kv := upgrading()
			kv.Status.HandlerRollout.MigrationWaits, kv.Status.HandlerRollout.NodesWaitingForMigrations = c.waits, c.count
			screen := Render(Snapshot{KubeVirt: kv, DaemonSets: []appsv1.DaemonSet{ds}, Now: now})
			handler := "  virt-handler                       Waiting [#####...............] 5/20 updated, 4 ready  v1.9.0  ETA 2m30s  canary node-003\n"
			if c.want == "" {
				if !strings.Contains(screen, handler+"\n") || strings.Contains(screen, "migration") {
					t.Fatalf("a line for no wait:\n%s", screen)
				}
				return
			}
			if want := handler + indent + c.want + "\n"; !strings.Contains(screen, want) {
				t.Fatalf("the screen lacks %q:\n%s", want, screen)
			}
		})
	}
}

// The canary's data-plane checks, one line each under virt-handler: state,
// VMI, the probe's deadline while it runs, and what it saw.
func TestRenderDataPlaneChecks(t *testing.T) {
	ds := appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "virt-handler"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: "quay.io/kubevirt/virt-handler:v1.9.0"}}}}}}
	kv := upgrading()
	deadline, done := metav1.NewTime(now.Add(4*time.Minute)), metav1.NewTime(now.Add(-time.Second))
	kv.Status.HandlerRollout.Phase = "Verifying"
	kv.Status.HandlerRollout.DataPlaneChecks = []v1.HandlerDataPlaneCheck{
		{Name: "CanaryVMIs", State: "Passed", Message: "3 VMIs on the canary node stay Running", FinishedAt: &done},
		{Name: "MigrationProbe", State: "Running", VMI: "default/vm-1", Deadline: &deadline,
			Message: "move 1 of 2: live migration p-0 of VMI default/vm-1 off node node-003 is Running"},
	}
	screen := Render(Snapshot{KubeVirt: kv, DaemonSets: []appsv1.DaemonSet{ds}, Now: now})
	const indent = "                                     "
	for _, want := range []string{
		indent + "check CanaryVMIs      Passed    3 VMIs on the canary node stay Running\n",
		indent + "check MigrationProbe  Running   default/vm-1  deadline 12:04:00Z  move 1 of 2: live migration p-0 of VMI default/vm-1 off node node-003 is Running\n",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the screen lacks %q:\n%s", want, screen)
		}
	}
}
