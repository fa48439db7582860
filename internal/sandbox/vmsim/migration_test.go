package vmsim

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

const duration = time.Second

func TestPlanMigration(t *testing.T) {
	running := func(edits ...func(*v1.VirtualMachineInstance)) *v1.VirtualMachineInstance {
		return newVMI("", append([]func(*v1.VirtualMachineInstance){runningOn(sourcePod)}, edits...)...)
	}
	targetRunning := targetAt("node-b", corev1.PodRunning, t0)
	atEnd := t0.Add(duration)
	for _, tc := range []struct {
		name  string
		mig   *v1.VirtualMachineInstanceMigration
		vmi   *v1.VirtualMachineInstance
		pods  []corev1.Pod
		now   time.Time // default t0
		want  v1.VirtualMachineInstanceMigrationPhase
		check func(*testing.T, migrationPlan)
	}{
		{name: "new: target pod with the current image", mig: newMigration(""), vmi: running(), pods: []corev1.Pod{sourcePod},
			want: v1.MigrationScheduling, check: func(t *testing.T, p migrationPlan) {
				pod := p.CreatePod
				if pod == nil {
					t.Fatal("no target pod")
				}
				checkLauncherPod(t, pod, newVMI(""), launcherPodName("vm", migUID), imageV2)
				if pod.Labels[MigrationJobLabel] != string(migUID) ||
					pod.Annotations[SourcePodAnnotation] != "source" || pod.Annotations[MigrationAnnotation] != "mig" {
					t.Errorf("target pod %s labels %v annotations %v", pod.Name, pod.Labels, pod.Annotations)
				}
				if start, err := time.Parse(time.RFC3339Nano, pod.Annotations[MigrationStartAnnotation]); err != nil || !start.Equal(t0) {
					t.Errorf("start %v (%v), want %v", start, err, t0)
				}
				noVMIWrite(t, p)
			}},
		{name: "target unscheduled: wait", mig: newMigration(v1.MigrationScheduling), vmi: running(),
			pods: []corev1.Pod{sourcePod, targetAt("", corev1.PodPending, t0)}, check: nothingToDo},
		{name: "target bound: the VMI learns source and target", mig: newMigration(v1.MigrationScheduling), vmi: running(),
			pods: []corev1.Pod{sourcePod, targetAt("node-b", corev1.PodPending, t0)}, want: v1.MigrationScheduled,
			check: func(t *testing.T, p migrationPlan) {
				if p.VMIStatus == nil || !equality.Semantic.DeepEqual(p.VMIStatus.MigrationState, &started) {
					t.Fatalf("VMI status %+v, want migration state %+v", p.VMIStatus, started)
				}
				if ms := p.Status.MigrationState; ms == nil || ms.MigrationUID != migUID {
					t.Errorf("migration's migration state %+v", ms)
				}
				if p.VMIStatus.NodeName != "node-a" || p.VMIStatus.LauncherContainerImageVersion != imageV1 {
					t.Errorf("VMI moved early: %+v", p.VMIStatus)
				}
			}},
		{name: "Scheduled → PreparingTarget", mig: newMigration(v1.MigrationScheduled), vmi: running(withMigrationState(started)),
			pods: []corev1.Pod{sourcePod, targetRunning}, want: v1.MigrationPreparingTarget, check: noVMIWrite},
		{name: "PreparingTarget → TargetReady", mig: newMigration(v1.MigrationPreparingTarget), vmi: running(withMigrationState(started)),
			pods: []corev1.Pod{sourcePod, targetRunning}, want: v1.MigrationTargetReady, check: noVMIWrite},
		{name: "TargetReady → Running", mig: newMigration(v1.MigrationTargetReady), vmi: running(withMigrationState(started)),
			pods: []corev1.Pod{sourcePod, targetRunning}, want: v1.MigrationRunning, check: noVMIWrite},
		{name: "Running: requeue at the end time", mig: newMigration(v1.MigrationRunning), vmi: running(withMigrationState(started)),
			pods: []corev1.Pod{sourcePod, targetRunning}, now: t0.Add(300 * time.Millisecond), check: func(t *testing.T, p migrationPlan) {
				if p.RequeueAfter != 700*time.Millisecond || p.Status != nil || p.VMIStatus != nil || len(p.DeletePods) > 0 {
					t.Errorf("plan %+v, want only a requeue after 700ms", p)
				}
			}},
		{name: "held past its end: Running, no requeue (the release is an update)", mig: annotatedMigration(newMigration(v1.MigrationRunning), HoldMigrationAnnotation, "true"),
			vmi: running(withMigrationState(started)), pods: []corev1.Pod{sourcePod, targetRunning}, now: atEnd.Add(time.Hour),
			check: func(t *testing.T, p migrationPlan) {
				nothingToDo(t, p)
				if p.RequeueAfter != 0 {
					t.Errorf("requeue after %v: a held migration is looked at again when released, not polled", p.RequeueAfter)
				}
			}},
		{name: "held, not yet at its end: requeue at the end time", mig: annotatedMigration(newMigration(v1.MigrationRunning), HoldMigrationAnnotation, "true"),
			vmi: running(withMigrationState(started)), pods: []corev1.Pod{sourcePod, targetRunning}, now: t0.Add(300 * time.Millisecond),
			check: func(t *testing.T, p migrationPlan) {
				if p.RequeueAfter != 700*time.Millisecond || p.Status != nil || p.VMIStatus != nil {
					t.Errorf("plan %+v, want only a requeue after 700ms", p)
				}
			}},
		{name: "released after its end: ends at once", mig: annotatedMigration(newMigration(v1.MigrationRunning), HoldMigrationAnnotation, "false"),
			vmi: running(withMigrationState(started)), pods: []corev1.Pod{sourcePod, targetRunning}, now: atEnd.Add(time.Hour), want: v1.MigrationSucceeded},
		{name: "held and failing: fails once released, not before", mig: annotatedMigration(newMigration(v1.MigrationRunning), HoldMigrationAnnotation, "true"),
			vmi:  running(withMigrationState(started), annotated(FailMigrationsAnnotation, "1")),
			pods: []corev1.Pod{sourcePod, targetRunning}, now: atEnd, check: nothingToDo},
		{name: "stale pod cache does not step back", mig: newMigration(v1.MigrationRunning), vmi: running(withMigrationState(started)),
			pods: []corev1.Pod{sourcePod, targetAt("node-b", corev1.PodPending, t0)}, check: nothingToDo},
		{name: "end: VMI first moves to the target, source pod deleted", mig: newMigration(v1.MigrationRunning), vmi: running(withMigrationState(started)),
			pods: []corev1.Pod{sourcePod, targetRunning}, now: atEnd, want: v1.MigrationSucceeded, check: func(t *testing.T, p migrationPlan) {
				st := p.VMIStatus
				if st == nil || st.NodeName != "node-b" || st.LauncherContainerImageVersion != imageV2 || len(st.ActivePods) != 1 || st.ActivePods["target-uid"] != "node-b" {
					t.Fatalf("VMI status %+v", st)
				}
				if ms := st.MigrationState; !ms.Completed || ms.Failed || ms.EndTimestamp == nil || !ms.EndTimestamp.Time.Equal(atEnd) {
					t.Errorf("migration state %+v", ms)
				}
				if !slices.Equal(p.DeletePods, []string{"source"}) || p.ConsumeFailure {
					t.Errorf("delete %v consume %v", p.DeletePods, p.ConsumeFailure)
				}
			}},
		{name: "end without the start annotation: from creationTimestamp", mig: newMigration(v1.MigrationRunning), vmi: running(withMigrationState(started)),
			pods: []corev1.Pod{sourcePod, withoutAnnotation(targetRunning, MigrationStartAnnotation)}, now: t0, want: v1.MigrationSucceeded},
		{name: "end with fail-migrations: counted down, VMI stays", mig: newMigration(v1.MigrationRunning),
			vmi:  running(withMigrationState(started), annotated(FailMigrationsAnnotation, "2")),
			pods: []corev1.Pod{sourcePod, targetRunning}, now: atEnd, want: v1.MigrationFailed, check: func(t *testing.T, p migrationPlan) {
				wantFailedOnSource(t, p)
				if !p.ConsumeFailure {
					t.Error("the failure is not counted")
				}
			}},
		{name: "failure already counted (restart): not counted twice", mig: newMigration(v1.MigrationRunning),
			vmi:  running(withMigrationState(started), annotated(FailedMigrationAnnotation, string(migUID))),
			pods: []corev1.Pod{sourcePod, targetRunning}, now: atEnd, want: v1.MigrationFailed, check: func(t *testing.T, p migrationPlan) {
				wantFailedOnSource(t, p)
				if p.ConsumeFailure {
					t.Error("counted twice")
				}
			}},
		{name: "an earlier migration's failure does not fail this one", mig: newMigration(v1.MigrationRunning),
			vmi:  running(withMigrationState(started), annotated(FailedMigrationAnnotation, "other-uid")),
			pods: []corev1.Pod{sourcePod, targetRunning}, now: atEnd, want: v1.MigrationSucceeded},
		{name: "VMI already completed it (restart): only the phase and source pod", mig: newMigration(v1.MigrationRunning),
			vmi:  newVMI("", runningOn(targetRunning), withMigrationState(completed(false))),
			pods: []corev1.Pod{sourcePod, targetRunning}, want: v1.MigrationSucceeded, check: func(t *testing.T, p migrationPlan) {
				noVMIWrite(t, p)
				if !slices.Equal(p.DeletePods, []string{"source"}) {
					t.Errorf("delete %v", p.DeletePods)
				}
			}},
		{name: "VMI already failed it (restart)", mig: newMigration(v1.MigrationRunning),
			vmi:  running(withMigrationState(completed(true))),
			pods: []corev1.Pod{sourcePod, targetRunning}, want: v1.MigrationFailed, check: func(t *testing.T, p migrationPlan) {
				noVMIWrite(t, p)
				if !slices.Equal(p.DeletePods, []string{"target"}) {
					t.Errorf("delete %v", p.DeletePods)
				}
			}},
		{name: "no such VMI", mig: newMigration(""), want: v1.MigrationFailed},
		{name: "VMI not Running", mig: newMigration(""), vmi: newVMI(v1.VMIScheduled), want: v1.MigrationFailed},
		{name: "VMI non-migratable", mig: newMigration(""), vmi: running(labelled(NonMigratableLabel, "true")), pods: []corev1.Pod{sourcePod}, want: v1.MigrationFailed},
		{name: "VMI shut down mid-migration: target deleted", mig: newMigration(v1.MigrationRunning),
			vmi:  newVMI(v1.VMISucceeded, withMigrationState(started)),
			pods: []corev1.Pod{targetRunning}, want: v1.MigrationFailed, check: func(t *testing.T, p migrationPlan) {
				if p.VMIStatus == nil || !p.VMIStatus.MigrationState.Failed || !slices.Equal(p.DeletePods, []string{"target"}) || p.ConsumeFailure {
					t.Errorf("plan %+v", p)
				}
			}},
		{name: "source pod evicted mid-migration", mig: newMigration(v1.MigrationRunning), vmi: running(withMigrationState(started)),
			pods: []corev1.Pod{terminating(sourcePod), targetRunning}, want: v1.MigrationFailed},
		{name: "target pod deleted", mig: newMigration(v1.MigrationRunning), vmi: running(withMigrationState(started)),
			pods: []corev1.Pod{sourcePod}, want: v1.MigrationFailed},
		{name: "another migration runs: Pending", mig: newMigration(""),
			vmi:  running(withMigrationState(v1.VirtualMachineInstanceMigrationState{MigrationUID: "other"})),
			pods: []corev1.Pod{sourcePod}, want: v1.MigrationPending, check: func(t *testing.T, p migrationPlan) {
				if p.CreatePod != nil {
					t.Error("target pod created while another migration runs")
				}
			}},
		{name: "Succeeded: left alone", mig: newMigration(v1.MigrationSucceeded), vmi: newVMI("", runningOn(targetRunning), withMigrationState(completed(false))),
			pods: []corev1.Pod{targetRunning}, check: nothingToDo},
		{name: "Succeeded, source pod left over by a restart: deleted", mig: newMigration(v1.MigrationSucceeded),
			vmi:  newVMI("", runningOn(targetRunning), withMigrationState(completed(false))),
			pods: []corev1.Pod{sourcePod, targetRunning}, check: func(t *testing.T, p migrationPlan) {
				if !slices.Equal(p.DeletePods, []string{"source"}) || p.Status != nil || p.VMIStatus != nil {
					t.Errorf("plan %+v", p)
				}
			}},
		{name: "Failed: left alone", mig: newMigration(v1.MigrationFailed), vmi: running(withMigrationState(completed(true))),
			pods: []corev1.Pod{sourcePod, targetRunning}, check: nothingToDo},
		{name: "being deleted before the end: abort", mig: deleting(newMigration(v1.MigrationRunning)), vmi: running(withMigrationState(started)),
			pods: []corev1.Pod{sourcePod, targetRunning}, check: wantAborted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.now.IsZero() {
				tc.now = t0
			}
			p := planMigration(migrationInput{Migration: tc.mig, VMI: tc.vmi, Pods: tc.pods, Image: imageV2, Duration: duration, Now: tc.now})
			if tc.want != "" && (p.Status == nil || p.Status.Phase != tc.want) {
				t.Fatalf("migration status %+v, want phase %s", p.Status, tc.want)
			}
			if tc.check != nil {
				tc.check(t, p)
			}
		})
	}
}

func TestPlanAbort(t *testing.T) {
	vmi := newVMI("", runningOn(sourcePod), withMigrationState(started))
	wantAborted(t, planAbort(migUID, vmi, []corev1.Pod{targetAt("node-b", corev1.PodRunning, t0)}))

	// Deleted after it succeeded: the VMI runs in the target pod and keeps its state.
	target := targetAt("node-b", corev1.PodRunning, t0)
	done := newVMI("", runningOn(target), withMigrationState(completed(false)))
	if p := planAbort(migUID, done, []corev1.Pod{target}); len(p.DeletePods) > 0 || p.VMIStatus != nil {
		t.Errorf("finished migration deleted: plan %+v, want nothing", p)
	}
	// The VMI is gone: only the pod.
	if p := planAbort(migUID, nil, []corev1.Pod{target}); !slices.Equal(p.DeletePods, []string{"target"}) {
		t.Errorf("plan %+v, want the target pod deleted", p)
	}
}

func TestConsumeFailure(t *testing.T) {
	for _, tc := range []struct{ before, after string }{{"3", "2"}, {"1", ""}, {"0", ""}, {"junk", ""}} {
		got := consumeFailure(map[string]string{FailMigrationsAnnotation: tc.before, "keep": "me"}, migUID)
		if got[FailMigrationsAnnotation] != tc.after || got[FailedMigrationAnnotation] != string(migUID) || got["keep"] != "me" {
			t.Errorf("%q: annotations %v, want count %q", tc.before, got, tc.after)
		}
		if _, ok := got[FailMigrationsAnnotation]; ok && tc.after == "" {
			t.Errorf("%q: annotation kept at 0: %v", tc.before, got)
		}
	}
}

func completed(failed bool) v1.VirtualMachineInstanceMigrationState {
	ms := started
	ms.Completed, ms.Failed, ms.EndTimestamp = true, failed, &now
	return ms
}

func deleting(m *v1.VirtualMachineInstanceMigration) *v1.VirtualMachineInstanceMigration {
	m.DeletionTimestamp = &now
	return m
}

func withoutAnnotation(p corev1.Pod, key string) corev1.Pod {
	p = *p.DeepCopy()
	delete(p.Annotations, key)
	return p
}

func nothingToDo(t *testing.T, p migrationPlan) {
	t.Helper()
	if p.CreatePod != nil || p.Status != nil || p.VMIStatus != nil || len(p.DeletePods) > 0 || p.ConsumeFailure {
		t.Errorf("plan %+v, want nothing", p)
	}
}

func noVMIWrite(t *testing.T, p migrationPlan) {
	t.Helper()
	if p.VMIStatus != nil || p.ConsumeFailure {
		t.Errorf("VMI written: %+v", p.VMIStatus)
	}
}

func wantFailedOnSource(t *testing.T, p migrationPlan) {
	t.Helper()
	st := p.VMIStatus
	if st == nil || st.NodeName != "node-a" || st.LauncherContainerImageVersion != imageV1 || st.ActivePods["source-uid"] != "node-a" {
		t.Fatalf("VMI status %+v, want it still on its source", st)
	}
	if ms := st.MigrationState; !ms.Failed || !ms.Completed || ms.EndTimestamp == nil {
		t.Errorf("migration state %+v", ms)
	}
	if !slices.Equal(p.DeletePods, []string{"target"}) {
		t.Errorf("delete %v, want the target pod", p.DeletePods)
	}
}

func wantAborted(t *testing.T, p migrationPlan) {
	t.Helper()
	if !slices.Equal(p.DeletePods, []string{"target"}) || p.VMIStatus == nil || p.VMIStatus.MigrationState != nil || p.Status != nil {
		t.Errorf("plan %+v, want the target pod deleted and the migration state cleared", p)
	}
}

func annotatedMigration(m *v1.VirtualMachineInstanceMigration, key, value string) *v1.VirtualMachineInstanceMigration {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[key] = value
	return m
}
