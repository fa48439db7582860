package vmsim

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// With SkipTransitional a VMI is written once, Running, when its pod runs.
func TestPlanVMISkipTransitional(t *testing.T) {
	for _, tc := range []struct {
		name      string
		vmi       *v1.VirtualMachineInstance
		pods      []corev1.Pod
		createPod bool
		phase     v1.VirtualMachineInstancePhase // "" = no status write
	}{
		{name: "new VMI: a launcher pod, no Scheduling", vmi: newVMI(""), createPod: true},
		{name: "pod unscheduled: no write", vmi: newVMI(""), pods: []corev1.Pod{pod("p", "u", "", corev1.PodPending, imageV1)}},
		{name: "pod bound: no Scheduled", vmi: newVMI(""), pods: []corev1.Pod{pod("p", "u", "node-a", corev1.PodPending, imageV1)}},
		{name: "pod Running: Running", vmi: newVMI(""), pods: []corev1.Pod{sourcePod}, phase: v1.VMIRunning},
		{name: "active pod gone: Succeeded as before", vmi: newVMI("", runningOn(sourcePod)), phase: v1.VMISucceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planVMI(vmiInput{VMI: tc.vmi, Pods: tc.pods, Image: imageV2, Now: now, SkipTransitional: true})
			if (p.CreatePod != nil) != tc.createPod {
				t.Fatalf("CreatePod %v, want %v", p.CreatePod, tc.createPod)
			}
			switch {
			case tc.phase == "" && p.Status != nil:
				t.Fatalf("status write %+v, want none", p.Status)
			case tc.phase != "" && (p.Status == nil || p.Status.Phase != tc.phase):
				t.Fatalf("status %+v, want phase %s", p.Status, tc.phase)
			}
		})
	}
}

// With SkipTransitional a migration is written twice by the simulator: Running
// (with the VMI's migration state, written first) once its target pod runs, and
// its end; the target pod and the end are as without it.
func TestPlanMigrationSkipTransitional(t *testing.T) {
	running := newVMI("", runningOn(sourcePod))
	plan := func(m *v1.VirtualMachineInstanceMigration, vmi *v1.VirtualMachineInstance, pods ...corev1.Pod) migrationPlan {
		return planMigration(migrationInput{Migration: m, VMI: vmi, Pods: pods, Image: imageV2, Duration: duration, Now: t0, SkipTransitional: true})
	}

	p := plan(newMigration(""), running, sourcePod)
	if p.CreatePod == nil || p.Status != nil || p.VMIStatus != nil {
		t.Fatalf("new migration: plan %+v, want only the target pod", p)
	}
	for _, target := range []corev1.Pod{targetAt("", corev1.PodPending, t0), targetAt("node-b", corev1.PodPending, t0)} {
		nothingToDo(t, plan(newMigration(""), running, sourcePod, target))
	}
	p = plan(newMigration(""), running, sourcePod, targetAt("node-b", corev1.PodRunning, t0))
	if p.VMIStatus == nil || p.VMIStatus.MigrationState == nil || p.VMIStatus.MigrationState.TargetPod != "target" {
		t.Fatalf("target running: VMI status %+v, want the migration state", p.VMIStatus)
	}
	if p.Status == nil || p.Status.Phase != v1.MigrationRunning || p.Status.MigrationState == nil {
		t.Fatalf("target running: migration status %+v, want Running with the migration state", p.Status)
	}

	migrating := newVMI("", runningOn(sourcePod), withMigrationState(started))
	end := planMigration(migrationInput{Migration: newMigration(v1.MigrationRunning), VMI: migrating,
		Pods: []corev1.Pod{sourcePod, targetAt("node-b", corev1.PodRunning, t0)}, Duration: duration, Now: t0.Add(duration), SkipTransitional: true})
	if end.Status == nil || end.Status.Phase != v1.MigrationSucceeded || len(end.DeletePods) != 1 {
		t.Fatalf("end: plan %+v, want Succeeded and the source pod deleted", end)
	}
}

// With SkipTransitional a VM's status is written Running or Stopped, never
// Starting or Stopping; the plan's actions are unchanged.
func TestPlanVMSkipTransitional(t *testing.T) {
	always := testVM(v1.RunStrategyAlways)
	for _, tc := range []struct {
		name   string
		vm     *v1.VirtualMachine
		vmi    *v1.VirtualMachineInstance
		create bool
		status string // "" = no status write
	}{
		{name: "no VMI: create it, no Starting", vm: always, create: true},
		{name: "VMI scheduling: no Starting", vm: always, vmi: ownedVMI(always, v1.VMIScheduling)},
		{name: "VMI running: Running", vm: always, vmi: ownedVMI(always, v1.VMIRunning), status: "Running"},
		{name: "Halted without VMI: Stopped", vm: testVM(v1.RunStrategyHalted), status: "Stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := planVM(vmInput{VM: tc.vm, VMI: tc.vmi, SkipTransitional: true})
			if err != nil {
				t.Fatal(err)
			}
			if (p.CreateVMI != nil) != tc.create {
				t.Fatalf("create %v, want %v", p.CreateVMI != nil, tc.create)
			}
			switch {
			case tc.status == "" && p.Status != nil:
				t.Errorf("status %+v written, want none", p.Status)
			case tc.status != "" && (p.Status == nil || p.Status.PrintableStatus != tc.status):
				t.Errorf("status %+v, want %s", p.Status, tc.status)
			}
		})
	}
}
