package workloadupdate

import (
	"strings"
	"testing"
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func window(start string, d time.Duration, tz string, days ...v1.Weekday) v1.MaintenanceWindow {
	return v1.MaintenanceWindow{Start: start, Duration: v1.Duration{Duration: d}, TimeZone: tz, Days: days}
}

func TestHoldStartsNothingButAborts(t *testing.T) {
	current := newVMI("back", curImage, migratable)
	stale := newMig("m-back", "back", v1.MigrationScheduling, true)
	vmis := append(many("e", 5, oldImage), many("m", 5, oldImage, migratable)...)
	vmis = append(vmis, current)
	for _, c := range []struct {
		name string
		edit func(*Inputs)
		want string
	}{
		{"paused", func(in *Inputs) { in.Paused = true }, "paused"},
		{"outside the windows", func(in *Inputs) { in.Windows = []v1.MaintenanceWindow{window("13:00", time.Hour, "")} }, "outside the maintenance windows; the next opens at 2026-01-01T13:00:00Z"},
		{"no window can open", func(in *Inputs) { in.Windows = []v1.MaintenanceWindow{window("13:00", time.Hour, "Nowhere/None")} }, "no maintenance window can open"},
		{"a setting stored that is not a Go duration", func(in *Inputs) {
			in.Settings = SettingsFrom(&v1.KubeVirt{Spec: v1.KubeVirtSpec{WorkloadUpdates: &v1.WorkloadUpdatePolicy{
				Methods: []v1.WorkloadUpdateMethod{"LiveMigrate", "Evict"}, RetryBackoff: &v1.Duration{Invalid: `"7d"`}}}})
		}, `a setting cannot be read, nothing new starts until it is fixed: spec.workloadUpdates.retryBackoff: "7d" is not a Go duration`},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := inputs(vmis, []v1.VirtualMachineInstanceMigration{stale}, both)
			c.edit(&in)
			p := PlanUpdate(in)
			if !strings.HasPrefix(p.Hold, c.want) || len(p.Migrate)+len(p.Evict) != 0 || len(p.Abort) != 1 {
				t.Fatalf("hold %q, %d migrations, %d evictions, %d aborts", p.Hold, len(p.Migrate), len(p.Evict), len(p.Abort))
			}
			if p.WaitingMigrate != 5 || p.WaitingEvict != 5 {
				t.Fatalf("waiting %d/%d", p.WaitingMigrate, p.WaitingEvict)
			}
			checkInvariants(t, in, p)
		})
	}
	in := inputs(vmis, nil, both)
	in.Windows = []v1.MaintenanceWindow{window("12:00", time.Minute, ""), window("12:02", time.Minute, "")}
	in.Now = t0.Add(time.Minute + 50*time.Second)
	if p := PlanUpdate(in); p.RequeueAfter != 10*time.Second {
		t.Fatalf("requeue %v, want the next opening in 10s", p.RequeueAfter)
	}
}
