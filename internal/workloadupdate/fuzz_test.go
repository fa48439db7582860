package workloadupdate

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// FuzzPlan builds arbitrary VMIs, migrations and settings from bytes; PlanUpdate
// must never panic and every plan must keep the invariants.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, int64(0), int64(0), uint64(1), int8(5), int8(10))
	f.Add([]byte{255, 0, 17, 33, 200, 99, 4}, int64(-3600), int64(7200), uint64(42), int8(-1), int8(0))
	f.Add([]byte{}, int64(1), int64(-1), uint64(0), int8(0), int8(-5))
	f.Fuzz(func(t *testing.T, data []byte, lastOff, intervalSec int64, seed uint64, par, batch int8) {
		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		images := []string{"", curImage, oldImage}
		phases := []v1.VirtualMachineInstancePhase{v1.VMIRunning, v1.VMIPending, v1.VMISucceeded, ""}
		condTypes := []v1.VirtualMachineInstanceConditionType{v1.VMIConditionLiveMigratable,
			v1.VMIConditionMigrationRequired, v1.VMIConditionVolumesChange, VMIConditionHotVCPUChange, VMIConditionHotMemoryChange}
		migPhases := []v1.VirtualMachineInstanceMigrationPhase{"", v1.MigrationPending, v1.MigrationScheduling,
			v1.MigrationRunning, v1.MigrationTargetReady, v1.MigrationSucceeded, v1.MigrationFailed}
		ts := metav1.NewTime(t0)
		var vmis []v1.VirtualMachineInstance
		for n := int(next() % 40); n > 0; n-- {
			b := next()
			vmi := newVMI(fmt.Sprintf("vm-%d", next()%32), images[int(b)%3], phase(phases[int(b>>2)%4]))
			for c := int(next() % 4); c > 0; c-- {
				x := next()
				s := corev1.ConditionTrue
				if x&0x80 != 0 {
					s = corev1.ConditionFalse
				}
				vmi.Status.Conditions = append(vmi.Status.Conditions, v1.VirtualMachineInstanceCondition{
					Type: condTypes[int(x)%len(condTypes)], Status: s})
			}
			if b&0x40 != 0 {
				vmi.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{StartTimestamp: &ts, Completed: b&0x20 != 0}
			}
			if b&0x10 != 0 {
				vmi.Annotations = map[string]string{TestAbortionAnnotation: ""}
			}
			if b&0x08 != 0 {
				vmi.DeletionTimestamp = &ts
			}
			vmi.Status.NodeName = fmt.Sprintf("n%d", b%3)
			vmis = append(vmis, vmi)
		}
		var migs []v1.VirtualMachineInstanceMigration
		for n := int(next() % 20); n > 0; n-- {
			b := next()
			m := newMig(fmt.Sprintf("m-%d", len(migs)), fmt.Sprintf("vm-%d", next()%32), migPhases[int(b)%len(migPhases)], b&0x80 != 0)
			if b&0x40 != 0 {
				m.DeletionTimestamp = &ts
			}
			migs = append(migs, m)
		}
		// The cache holds one VMI per key: the first of a name stands.
		seen := map[string]bool{}
		var unique []v1.VirtualMachineInstance
		for _, vmi := range vmis {
			if !seen[vmi.Name] {
				seen[vmi.Name] = true
				unique = append(unique, vmi)
			}
		}
		in := Inputs{VMIs: CompactVMIs(unique), Migrations: MigrationsOf(CompactMigrations(migs)), TargetLauncherImage: curImage, Now: t0, Seed: seed, Explain: true,
			Settings: Settings{
				Methods:               Methods{LiveMigrate: seed&1 != 0, Evict: seed&2 != 0},
				ParallelMigrations:    int(par),
				BatchEvictionSize:     int(batch),
				BatchEvictionInterval: time.Duration(intervalSec%100000) * time.Second,
				LastEvictionBatch:     t0.Add(time.Duration(lastOff%100000) * time.Second),
			}}
		if lastOff == 0 {
			in.LastEvictionBatch = time.Time{}
		}
		if seed&4 != 0 { // nodes n0..n2, each usable or not by a bit of the seed
			var nodes []corev1.Node
			for i := range 3 {
				n := node(fmt.Sprintf("n%d", i))
				n.Spec.Unschedulable = seed&(8<<i) != 0
				nodes = append(nodes, n)
			}
			in.Targets = NewTargets(nodes)
		}
		p := PlanUpdate(in)
		checkInvariants(t, in, p)
	})
}
