package workloadupdate

import (
	"testing"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func labelled(v string) vmiOpt {
	return func(x *v1.VirtualMachineInstance) { x.Labels = map[string]string{ChoiceKey: v} }
}

func annotatedWith(v string) vmiOpt {
	return func(x *v1.VirtualMachineInstance) { x.Annotations = map[string]string{ChoiceKey: v} }
}

func TestChoiceOf(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []vmiOpt
		want Choice
	}{
		{"none", nil, ChoiceDefault},
		{"label", []vmiOpt{labelled("Evict")}, ChoiceEvict},
		{"annotation", []vmiOpt{annotatedWith("None")}, ChoiceNone},
		{"the label wins", []vmiOpt{annotatedWith("None"), labelled("LiveMigrate")}, ChoiceLiveMigrate},
		{"a typo", []vmiOpt{labelled("evict")}, ChoiceInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			vmi := newVMI("vm", oldImage, c.opts...)
			if got, _ := ChoiceOf(compact(vmi)); got != c.want {
				t.Fatalf("ChoiceOf = %q, want %q", got, c.want)
			}
		})
	}
}

func TestPerVMChoice(t *testing.T) {
	vmis := []v1.VirtualMachineInstance{
		newVMI("default-live", oldImage, migratable),
		newVMI("default-stuck", oldImage),
		newVMI("restart-me", oldImage, migratable, labelled("Evict")),
		newVMI("leave-me", oldImage, migratable, labelled("None")),
		newVMI("only-migrate", oldImage, labelled("LiveMigrate")), // not migratable: waits
		newVMI("typo", oldImage, migratable, annotatedWith("Reboot")),
	}
	p := PlanUpdate(inputs(vmis, nil, both))
	mig, ev := names(p)
	if len(mig) != 1 || mig[0] != "default-live" {
		t.Fatalf("migrate %v", mig)
	}
	if len(ev) != 2 || ev[0] == "leave-me" || ev[1] == "leave-me" {
		t.Fatalf("evict %v", ev)
	}
	want := v1.WorkloadUpdateChoices{LiveMigrate: 2, Evict: 2, Leave: 1, Invalid: 1}
	if p.Choices != want || p.Outdated != 6 {
		t.Fatalf("choices %+v outdated %d, want %+v", p.Choices, p.Outdated, want)
	}
	if p.InvalidChoices[Key{ns, "typo"}] != "Reboot" {
		t.Fatalf("invalid choices %v", p.InvalidChoices)
	}
	if d := p.Decisions[Key{ns, "leave-me"}]; d.Bucket != Skip || d.Reason != "left alone by its "+ChoiceKey {
		t.Fatalf("leave-me: %+v", d)
	}
	// No method in the CR: a VM's choice moves nothing.
	if p := PlanUpdate(inputs(vmis, nil, Methods{})); len(p.Migrate)+len(p.Evict) != 0 {
		t.Fatalf("no method, yet %d moves", len(p.Migrate)+len(p.Evict))
	}
}
