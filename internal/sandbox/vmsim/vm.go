package vmsim

import (
	"encoding/json"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// vmInput is what the VM controller sees of one VM. Running is the legacy
// spec.running, which the API type does not carry.
type vmInput struct {
	VM      *v1.VirtualMachine
	Running *bool
	VMI     *v1.VirtualMachineInstance // the VMI named like the VM; nil if none
	// SkipTransitional writes no Starting or Stopping status
	// (Options.SkipTransitionalPhases): the VM shows its last settled one.
	SkipTransitional bool
}

// vmPlan is what the VM controller does, in this order.
type vmPlan struct {
	DeleteVMI bool                       // delete the VMI (precondition: its UID)
	CreateVMI *v1.VirtualMachineInstance // from the VM's template
	Status    *v1.VirtualMachineStatus   // nil: unchanged
}

// runStrategy is the VM's run strategy, spec.running mapped as KubeVirt does.
func runStrategy(vm *v1.VirtualMachine, running *bool) v1.VirtualMachineRunStrategy {
	switch {
	case vm.Spec.RunStrategy != nil:
		return *vm.Spec.RunStrategy
	case running != nil && *running:
		return v1.RunStrategyAlways
	default:
		return v1.RunStrategyHalted
	}
}

// planVM plays virt-controller's VM controller: a VM that should run gets a VMI
// from its template; one whose VMI finished (Succeeded after an eviction, or
// Failed) has it deleted and, once it is gone, recreated; Halted deletes the VMI.
// A VMI the VM does not control is never touched.
func planVM(in vmInput) (vmPlan, error) {
	vm, vmi := in.VM, in.VMI
	var p vmPlan
	if vm.DeletionTimestamp != nil {
		return p, nil
	}
	strategy := runStrategy(vm, in.Running)
	owned := vmi != nil && metav1.IsControlledBy(vmi, vm)
	switch {
	case vmi == nil && (strategy == v1.RunStrategyAlways || strategy == v1.RunStrategyRerunOnFailure):
		created, err := vmiFromTemplate(vm)
		if err != nil {
			return p, err
		}
		p.CreateVMI = created
	case owned && vmi.DeletionTimestamp == nil:
		restart := (strategy == v1.RunStrategyAlways && finished(vmi.Status.Phase)) ||
			(strategy == v1.RunStrategyRerunOnFailure && vmi.Status.Phase == v1.VMIFailed)
		p.DeleteVMI = restart || strategy == v1.RunStrategyHalted
	}
	st := vmStatus(vm, vmi, strategy, p)
	skipped := in.SkipTransitional && (st.PrintableStatus == "Starting" || st.PrintableStatus == "Stopping")
	if !skipped && !equality.Semantic.DeepEqual(&vm.Status, st) {
		p.Status = st
	}
	return p, nil
}

// vmStatus is the VM's printable status after the plan.
func vmStatus(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance, strategy v1.VirtualMachineRunStrategy, p vmPlan) *v1.VirtualMachineStatus {
	st := vm.Status.DeepCopy()
	st.Created = vmi != nil && !p.DeleteVMI
	st.Ready = st.Created && vmi.Status.Phase == v1.VMIRunning && vmiReady(vmi)
	keepsRunning := strategy == v1.RunStrategyAlways || strategy == v1.RunStrategyRerunOnFailure
	going := vmi != nil && (vmi.DeletionTimestamp != nil || p.DeleteVMI)
	switch {
	case st.Ready:
		st.PrintableStatus = "Running"
	case going && !keepsRunning:
		st.PrintableStatus = "Stopping"
	case going:
		st.PrintableStatus = "Starting" // deleted to be recreated
	case vmi == nil && !keepsRunning, vmi != nil && finished(vmi.Status.Phase):
		st.PrintableStatus = "Stopped"
	default:
		st.PrintableStatus = "Starting"
	}
	return st
}

func vmiReady(vmi *v1.VirtualMachineInstance) bool {
	for _, c := range vmi.Status.Conditions {
		if c.Type == v1.VMIConditionReady {
			return c.Status == "True"
		}
	}
	return false
}

// vmTemplate is the part of a VM's template the simulator copies into the VMI.
type vmTemplate struct {
	Metadata struct {
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	} `json:"metadata"`
	Spec json.RawMessage `json:"spec,omitempty"`
}

// vmiFromTemplate is the VMI a VM starts: named like the VM, controlled by it,
// with the template's labels, annotations and spec.
func vmiFromTemplate(vm *v1.VirtualMachine) (*v1.VirtualMachineInstance, error) {
	var t vmTemplate
	if vm.Spec.Template != nil && len(vm.Spec.Template.Raw) > 0 {
		if err := json.Unmarshal(vm.Spec.Template.Raw, &t); err != nil {
			return nil, fmt.Errorf("VM %s/%s: template: %w", vm.Namespace, vm.Name, err)
		}
	}
	spec := t.Spec
	if len(spec) == 0 || string(spec) == "null" {
		spec = json.RawMessage("{}")
	}
	return &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{
			Name:        vm.Name,
			Namespace:   vm.Namespace,
			Labels:      maps.Clone(t.Metadata.Labels),
			Annotations: maps.Clone(t.Metadata.Annotations),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         v1.GroupVersion.String(),
				Kind:               "VirtualMachine",
				Name:               vm.Name,
				UID:                vm.UID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: runtime.RawExtension{Raw: spec},
	}, nil
}
