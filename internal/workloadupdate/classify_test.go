package workloadupdate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func TestClassify(t *testing.T) {
	now := metav1.NewTime(t0)
	mem := cond(VMIConditionHotMemoryChange, corev1.ConditionTrue)
	vol := cond(v1.VMIConditionVolumesChange, corev1.ConditionTrue)
	hot := cond(v1.VMIConditionMigrationRequired, corev1.ConditionTrue)
	cases := []struct {
		name     string
		vmi      v1.VirtualMachineInstance
		migs     []v1.VirtualMachineInstanceMigration
		methods  Methods
		want     Bucket
		outdated bool
		priority v1.MigrationPriority
	}{
		{"current launcher is up to date", newVMI("a", curImage, migratable), nil, both, UpToDate, false, ""},
		{"empty launcher image is unknown and skipped", newVMI("a", "", migratable), nil, both, Skip, false, ""},
		{"not running is skipped", newVMI("a", oldImage, migratable, phase(v1.VMIScheduling)), nil, both, Skip, false, ""},
		{"final is skipped", newVMI("a", oldImage, migratable, phase(v1.VMISucceeded)), nil, both, Skip, false, ""},
		{"outdated migratable migrates system-critical", newVMI("a", oldImage, migratable), nil, both, Migrate, true, v1.PrioritySystemCritical},
		{"outdated not migratable is evicted", newVMI("a", oldImage), nil, both, Evict, true, ""},
		{"LiveMigratable=False is evicted", newVMI("a", oldImage, cond(v1.VMIConditionLiveMigratable, corev1.ConditionFalse)), nil, both, Evict, true, ""},
		{"evict only evicts migratable VMIs", newVMI("a", oldImage, migratable), nil, Methods{Evict: true}, Evict, true, ""},
		{"migrate only leaves non-migratable VMIs", newVMI("a", oldImage), nil, Methods{LiveMigrate: true}, Skip, true, ""},
		{"no method: counted, no action", newVMI("a", oldImage, migratable), nil, Methods{}, Skip, true, ""},
		{"memory hotplug migrates user-triggered", newVMI("a", curImage, migratable, mem), nil, both, Migrate, true, v1.PriorityUserTriggered},
		{"MigrationRequired migrates user-triggered", newVMI("a", curImage, migratable, hot), nil, both, Migrate, true, v1.PriorityUserTriggered},
		{"vCPU change of any status needs a migration", newVMI("a", curImage, migratable, cond(VMIConditionHotVCPUChange, corev1.ConditionFalse)), nil, both, Migrate, true, v1.PriorityUserTriggered},
		{"volume change migrates even if not LiveMigratable", newVMI("a", curImage, vol), nil, both, Migrate, true, v1.PriorityUserTriggered},
		{"hotplug on a non-migratable VMI is evicted", newVMI("a", curImage, hot), nil, both, Evict, true, ""},
		{"MemoryChange=False needs nothing", newVMI("a", curImage, migratable, cond(VMIConditionHotMemoryChange, corev1.ConditionFalse)), nil, both, UpToDate, false, ""},
		{"migrating VMI is in flight", newVMI("a", oldImage, migratable, migState(v1.VirtualMachineInstanceMigrationState{StartTimestamp: &now})), nil, both, InFlight, true, ""},
		{"a pending user migration makes it in flight", newVMI("a", oldImage, migratable), []v1.VirtualMachineInstanceMigration{newMig("m", "a", v1.MigrationPending, false)}, both, InFlight, true, ""},
		{"an unset-phase migration makes it in flight", newVMI("a", oldImage), []v1.VirtualMachineInstanceMigration{newMig("m", "a", "", true)}, both, InFlight, true, ""},
		{"a finished migration does not", newVMI("a", oldImage, migratable), []v1.VirtualMachineInstanceMigration{newMig("m", "a", v1.MigrationFailed, true)}, both, Migrate, true, v1.PrioritySystemCritical},
		{"up to date with a running update migration aborts", newVMI("a", curImage, migratable), []v1.VirtualMachineInstanceMigration{newMig("m", "a", v1.MigrationRunning, true)}, both, Abort, false, ""},
		{"no method: no abort either", newVMI("a", curImage, migratable), []v1.VirtualMachineInstanceMigration{newMig("m", "a", v1.MigrationRunning, true)}, Methods{}, UpToDate, false, ""},
		{"up to date with a user migration does not abort", newVMI("a", curImage, migratable), []v1.VirtualMachineInstanceMigration{newMig("m", "a", v1.MigrationRunning, false)}, both, UpToDate, false, ""},
		{"change in progress keeps its migration", newVMI("a", curImage, migratable, mem), []v1.VirtualMachineInstanceMigration{newMig("m", "a", v1.MigrationRunning, true)}, both, InFlight, true, ""},
		{"outdated keeps its migration", newVMI("a", oldImage, migratable), []v1.VirtualMachineInstanceMigration{newMig("m", "a", v1.MigrationRunning, true)}, both, InFlight, true, ""},
		{"unknown image never aborts", newVMI("a", "", migratable), []v1.VirtualMachineInstanceMigration{newMig("m", "a", v1.MigrationRunning, true)}, both, Skip, false, ""},
		{"test annotation aborts without a change", newVMI("a", curImage, annotated(TestAbortionAnnotation)), []v1.VirtualMachineInstanceMigration{newMig("m", "a", v1.MigrationRunning, true)}, both, Abort, false, ""},
		{"test annotation aborts with a change", newVMI("a", curImage, mem, annotated(TestAbortionAnnotation)), []v1.VirtualMachineInstanceMigration{newMig("m", "a", v1.MigrationRunning, true)}, both, Abort, false, ""},
		{"past the point of no return is not aborted", newVMI("a", curImage, migState(v1.VirtualMachineInstanceMigrationState{Completed: true, MigrationUID: "uid-m"})), []v1.VirtualMachineInstanceMigration{newMig("m", "a", v1.MigrationRunning, true)}, both, UpToDate, false, ""},
		{"a stale completed state of an older migration does not block the abort", newVMI("a", curImage, migState(v1.VirtualMachineInstanceMigrationState{Completed: true, MigrationUID: "older"})), []v1.VirtualMachineInstanceMigration{newMig("m", "a", v1.MigrationRunning, true)}, both, Abort, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Classify(compact(c.vmi), curImage, unfinishedOf(KeyOf(&c.vmi), c.migs...), c.methods)
			if d.Bucket != c.want || d.Outdated != c.outdated || d.Priority != c.priority {
				t.Fatalf("got %+v, want bucket %s outdated %v priority %q", d, c.want, c.outdated, c.priority)
			}
			if d.Reason == "" {
				t.Fatal("no reason")
			}
			if (d.Bucket == Abort) != (len(d.AbortMigrations) > 0) {
				t.Fatalf("abort migrations %v for bucket %s", d.AbortMigrations, d.Bucket)
			}
		})
	}
}

func TestAbortSkipsMigrationsBeingDeleted(t *testing.T) {
	m := newMig("m", "a", v1.MigrationRunning, true)
	now := metav1.NewTime(t0)
	m.DeletionTimestamp = &now
	vmi := newVMI("a", curImage)
	d := Classify(compact(vmi), curImage, unfinishedOf(KeyOf(&vmi), m), both)
	if d.Bucket != UpToDate {
		t.Fatalf("got %s, want no second abort", d.Bucket)
	}
}

func TestNewMigration(t *testing.T) {
	long := "a-very-long-name-that-is-definitely-longer-than-sixty-three-characters-x"
	cases := []struct {
		name      string
		vmi       v1.VirtualMachineInstance
		priority  v1.MigrationPriority
		wantLabel string
	}{
		{"upgrade", newVMI("vm", oldImage, migratable), v1.PrioritySystemCritical, ""},
		{"volume change labelled with the name", newVMI("vm", curImage, cond(v1.VMIConditionVolumesChange, corev1.ConditionTrue)), v1.PriorityUserTriggered, "vm"},
		{"long name labelled with the UID", newVMI(long, curImage, cond(v1.VMIConditionVolumesChange, corev1.ConditionTrue)), v1.PriorityUserTriggered, "uid-" + long},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "long name labelled with the UID" {
				c.vmi.UID = "1234"
				c.wantLabel = "1234"
			}
			m := NewMigration(compact(c.vmi), c.priority)
			if m.GenerateName != "kubevirt-workload-update-" || m.Name != "" || m.Namespace != ns {
				t.Fatalf("bad meta %+v", m.ObjectMeta)
			}
			if v, ok := m.Annotations["kubevirt.io/workloadUpdateMigration"]; !ok || v != "" {
				t.Fatalf("annotation %v", m.Annotations)
			}
			if m.Spec.VMIName != c.vmi.Name || m.Spec.Priority == nil || *m.Spec.Priority != c.priority {
				t.Fatalf("spec %+v", m.Spec)
			}
			if got := m.Labels["kubevirt.io/volume-update-migration"]; got != c.wantLabel {
				t.Fatalf("label %q, want %q", got, c.wantLabel)
			}
		})
	}
}
