package vmsim

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func testVM(strategy v1.VirtualMachineRunStrategy) *v1.VirtualMachine {
	vm := &v1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns", UID: "vm-uid"},
		Spec: v1.VirtualMachineSpec{Template: &runtime.RawExtension{Raw: []byte(
			`{"metadata":{"labels":{"app":"x","` + NonMigratableLabel + `":"true"},"annotations":{"a":"b"}},"spec":{"domain":{"cpu":{"cores":1}}}}`,
		)}},
	}
	if strategy != "" {
		vm.Spec.RunStrategy = ptr.To(strategy)
	}
	return vm
}

// ownedVMI is the VM's VMI in phase (Ready when Running).
func ownedVMI(vm *v1.VirtualMachine, phase v1.VirtualMachineInstancePhase) *v1.VirtualMachineInstance {
	vmi, err := vmiFromTemplate(vm)
	if err != nil {
		panic(err)
	}
	vmi.Status.Phase = phase
	if phase == v1.VMIRunning {
		vmi.Status.Conditions = []v1.VirtualMachineInstanceCondition{{Type: v1.VMIConditionReady, Status: corev1.ConditionTrue}}
	}
	return vmi
}

func TestPlanVM(t *testing.T) {
	always := testVM(v1.RunStrategyAlways)
	legacy := testVM("")
	foreign := ownedVMI(always, v1.VMISucceeded)
	foreign.OwnerReferences = nil
	for _, tc := range []struct {
		name           string
		vm             *v1.VirtualMachine
		running        *bool
		vmi            *v1.VirtualMachineInstance
		create, delete bool
		status         string
		ready          bool
	}{
		{name: "Always without VMI: start", vm: always, create: true, status: "Starting"},
		{name: "spec.running true: start", vm: legacy, running: ptr.To(true), create: true, status: "Starting"},
		{name: "spec.running false: stays stopped", vm: legacy, running: ptr.To(false), status: "Stopped"},
		{name: "VMI scheduling", vm: always, vmi: ownedVMI(always, v1.VMIScheduling), status: "Starting"},
		{name: "VMI running", vm: always, vmi: ownedVMI(always, v1.VMIRunning), status: "Running", ready: true},
		{name: "VMI shut down (eviction): delete it to restart", vm: always, vmi: ownedVMI(always, v1.VMISucceeded), delete: true, status: "Starting"},
		{name: "VMI failed: restart", vm: always, vmi: ownedVMI(always, v1.VMIFailed), delete: true, status: "Starting"},
		{name: "VMI being deleted: wait", vm: always, vmi: beingDeleted(ownedVMI(always, v1.VMISucceeded)), status: "Starting"},
		{name: "RerunOnFailure after a shutdown: stays stopped", vm: testVM(v1.RunStrategyRerunOnFailure), vmi: ownedVMI(always, v1.VMISucceeded), status: "Stopped"},
		{name: "RerunOnFailure after a failure: restart", vm: testVM(v1.RunStrategyRerunOnFailure), vmi: ownedVMI(always, v1.VMIFailed), delete: true, status: "Starting"},
		{name: "Manual after a shutdown: stays stopped", vm: testVM(v1.RunStrategyManual), vmi: ownedVMI(always, v1.VMISucceeded), status: "Stopped"},
		{name: "Halted with a VMI: stop it", vm: testVM(v1.RunStrategyHalted), vmi: ownedVMI(always, v1.VMIRunning), delete: true, status: "Stopping"},
		{name: "Halted without VMI", vm: testVM(v1.RunStrategyHalted), status: "Stopped"},
		{name: "a VMI the VM does not control is left alone", vm: always, vmi: foreign, status: "Stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := planVM(vmInput{VM: tc.vm, Running: tc.running, VMI: tc.vmi})
			if err != nil {
				t.Fatal(err)
			}
			if (p.CreateVMI != nil) != tc.create || p.DeleteVMI != tc.delete {
				t.Fatalf("create %v delete %v, want %v %v", p.CreateVMI != nil, p.DeleteVMI, tc.create, tc.delete)
			}
			if p.Status == nil || p.Status.PrintableStatus != tc.status || p.Status.Ready != tc.ready {
				t.Errorf("status %+v, want %s ready=%v", p.Status, tc.status, tc.ready)
			}
		})
	}
}

func TestPlanVMNoNeedlessStatusWrite(t *testing.T) {
	vm := testVM(v1.RunStrategyAlways)
	vm.Status = v1.VirtualMachineStatus{PrintableStatus: "Running", Created: true, Ready: true}
	p, err := planVM(vmInput{VM: vm, VMI: ownedVMI(vm, v1.VMIRunning)})
	if err != nil || p.Status != nil || p.CreateVMI != nil || p.DeleteVMI {
		t.Errorf("plan %+v (%v), want nothing", p, err)
	}
}

func TestVMIFromTemplate(t *testing.T) {
	vm := testVM(v1.RunStrategyAlways)
	vmi, err := vmiFromTemplate(vm)
	if err != nil {
		t.Fatal(err)
	}
	if vmi.Name != "vm" || vmi.Namespace != "ns" || !metav1.IsControlledBy(vmi, vm) {
		t.Errorf("VMI %s/%s owners %v", vmi.Namespace, vmi.Name, vmi.OwnerReferences)
	}
	if vmi.Labels["app"] != "x" || vmi.Labels[NonMigratableLabel] != "true" || vmi.Annotations["a"] != "b" {
		t.Errorf("labels %v annotations %v", vmi.Labels, vmi.Annotations)
	}
	if string(vmi.Spec.Raw) != `{"domain":{"cpu":{"cores":1}}}` {
		t.Errorf("spec %s", vmi.Spec.Raw)
	}
	vm.Spec.Template = nil
	if vmi, err := vmiFromTemplate(vm); err != nil || string(vmi.Spec.Raw) != "{}" {
		t.Errorf("no template: spec %s, %v; want {}", vmi.Spec.Raw, err)
	}
	vm.Spec.Template = &runtime.RawExtension{Raw: []byte(`{"metadata":[]}`)}
	if _, err := vmiFromTemplate(vm); err == nil || !strings.Contains(err.Error(), "template") {
		t.Errorf("bad template: %v", err)
	}
}

func beingDeleted(vmi *v1.VirtualMachineInstance) *v1.VirtualMachineInstance {
	vmi.DeletionTimestamp = &now
	return vmi
}

func TestCreateVMs(t *testing.T) {
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	ctx := context.Background()
	names, err := CreateVMs(ctx, c, CreateOptions{Count: 12, NonMigratable: 3, Annotations: map[string]string{FailMigrationsAnnotation: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 12 || names[0] != "vm-0000" || names[11] != "vm-0011" {
		t.Fatalf("names %v", names)
	}
	for i, name := range names {
		vm, vmi := &v1.VirtualMachine{}, &v1.VirtualMachineInstance{}
		key := client.ObjectKey{Namespace: DefaultNamespace, Name: name}
		if err := c.Get(ctx, key, vm); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, key, vmi); err != nil {
			t.Fatal(err)
		}
		if vm.Spec.RunStrategy == nil || *vm.Spec.RunStrategy != v1.RunStrategyAlways || !metav1.IsControlledBy(vmi, vm) {
			t.Errorf("%s: run strategy %v, VMI owners %v", name, vm.Spec.RunStrategy, vmi.OwnerReferences)
		}
		var tmpl vmTemplate
		if err := json.Unmarshal(vm.Spec.Template.Raw, &tmpl); err != nil {
			t.Fatal(err)
		}
		wantNonMigratable := i >= 9
		for what, labels := range map[string]map[string]string{"template": tmpl.Metadata.Labels, "VMI": vmi.Labels} {
			if (labels[NonMigratableLabel] == "true") != wantNonMigratable {
				t.Errorf("%s %s labels %v, want non-migratable=%v", name, what, labels, wantNonMigratable)
			}
		}
		if vmi.Annotations[FailMigrationsAnnotation] != "1" {
			t.Errorf("%s: VMI annotations %v", name, vmi.Annotations)
		}
	}
	// Names in use: the error names the VM.
	if _, err := CreateVMs(ctx, c, CreateOptions{Count: 1}); err == nil || !strings.Contains(err.Error(), "vm-0000") {
		t.Errorf("second create: %v", err)
	}
}

func TestCreateOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    CreateOptions
		want string
	}{
		{CreateOptions{Count: 0}, "count"},
		{CreateOptions{Count: 2, NonMigratable: 3}, "non-migratable"},
		{CreateOptions{Count: 2, NonMigratable: -1}, "non-migratable"},
		{CreateOptions{Count: 2, NonMigratable: 2}, ""},
	} {
		err := tc.o.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Validate(%+v) = %v, want an error naming %q", tc.o, err, tc.want)
		}
	}
	if names := VMNames(CreateOptions{Count: 12345, NamePrefix: "x"}); names[0] != "x-00000" || len(names) != 12345 {
		t.Errorf("names %v...", names[:2])
	}
}
