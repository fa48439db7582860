package vmsim

import (
	"testing"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

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
