package vmsim

import (
	"testing"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// RunningOn ends the sandbox demo's upgrade, whatever the outdated count reads
// (it can be the one taken before the upgrade), and every WaitRunning.
func TestRunningOn(t *testing.T) {
	vmi := func(name string, phase v1.VirtualMachineInstancePhase, image string) v1.VirtualMachineInstance {
		out := v1.VirtualMachineInstance{}
		out.Name, out.Status.Phase, out.Status.LauncherContainerImageVersion = name, phase, image
		return out
	}
	const old, target = "launcher:v1.8.4", "launcher:v1.9.0"
	names := []string{"vm-0", "vm-1"}
	for _, tc := range []struct {
		name string
		vmis []v1.VirtualMachineInstance
		want bool
	}{
		{"all moved", []v1.VirtualMachineInstance{vmi("vm-0", v1.VMIRunning, target), vmi("vm-1", v1.VMIRunning, target)}, true},
		{"one on the old launcher", []v1.VirtualMachineInstance{vmi("vm-0", v1.VMIRunning, target), vmi("vm-1", v1.VMIRunning, old)}, false},
		{"one not running", []v1.VirtualMachineInstance{vmi("vm-0", v1.VMIRunning, target), vmi("vm-1", v1.VMIScheduling, target)}, false},
		{"one missing", []v1.VirtualMachineInstance{vmi("vm-0", v1.VMIRunning, target)}, false},
		{"others do not count", []v1.VirtualMachineInstance{vmi("vm-0", v1.VMIRunning, target), vmi("other", v1.VMIRunning, target)}, false},
	} {
		if got := RunningOn(tc.vmis, names, target) == len(names); got != tc.want {
			t.Errorf("%s: all running on the target = %v, want %v", tc.name, got, tc.want)
		}
	}

	// Without an image, any known launcher counts; an unknown one does not.
	unknown := []v1.VirtualMachineInstance{{}, {}}
	unknown[0].Name, unknown[0].Status.Phase, unknown[0].Status.LauncherContainerImageVersion = "vm-0", v1.VMIRunning, "launcher:x"
	unknown[1].Name, unknown[1].Status.Phase = "vm-1", v1.VMIRunning
	if n := RunningOn(unknown, names, ""); n != 1 {
		t.Errorf("RunningOn without an image = %d, want 1 (vm-1's launcher is unknown)", n)
	}
}
