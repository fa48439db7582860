package workloadupdate

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Initial: time.Minute, Max: 5 * time.Minute}
	for n, want := range map[int]time.Duration{0: 0, 1: time.Minute, 2: 2 * time.Minute, 3: 4 * time.Minute, 4: 5 * time.Minute, 60: 5 * time.Minute} {
		if got := b.Delay(n); got != want {
			t.Errorf("Delay(%d) = %v, want %v", n, got, want)
		}
	}
	if got := (Backoff{}).Delay(3); got != 0 {
		t.Errorf("no backoff configured: %v", got)
	}
}

func TestBackoffDecide(t *testing.T) {
	b := Backoff{Initial: time.Minute, Max: 30 * time.Minute, MaxFailures: 3}
	cases := []struct {
		name   string
		f      Failures
		now    time.Time
		want   Verdict
		waitTo time.Time
	}{
		{"no failure", Failures{}, t0, Retry, time.Time{}},
		{"one failure, within a minute", Failures{Count: 1, Last: t0}, t0.Add(59 * time.Second), Wait, t0.Add(time.Minute)},
		{"one failure, a minute later", Failures{Count: 1, Last: t0}, t0.Add(time.Minute), Retry, time.Time{}},
		{"two failures wait two minutes", Failures{Count: 2, Last: t0}, t0.Add(90 * time.Second), Wait, t0.Add(2 * time.Minute)},
		{"three failures: attention", Failures{Count: 3, Last: t0}, t0.Add(time.Hour), GiveUp, time.Time{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, at := b.Decide(c.f, c.now)
			if got != c.want || !at.Equal(c.waitTo) {
				t.Fatalf("Decide = %v %v, want %v %v", got, at, c.want, c.waitTo)
			}
		})
	}
	if v, _ := (Backoff{}).Decide(Failures{Count: 50, Last: t0}, t0); v != Retry {
		t.Fatal("upstream's settings (no backoff) always retry")
	}
}

func failedAt(name, vmi string, created, failed time.Time, wu bool) v1.VirtualMachineInstanceMigration {
	m := newMig(name, vmi, v1.MigrationFailed, wu)
	m.CreationTimestamp = metav1.NewTime(created)
	m.Status.PhaseTransitionTimestamps = []v1.MigrationPhaseTransitionTimestamp{
		{Phase: v1.MigrationRunning, PhaseTransitionTimestamp: metav1.NewTime(created)},
		{Phase: v1.MigrationFailed, PhaseTransitionTimestamp: metav1.NewTime(failed)},
	}
	return m
}

func TestFailuresAreReadFromTheMigrations(t *testing.T) {
	vmi := newVMI("vm", oldImage, migratable)
	vmi.CreationTimestamp = metav1.NewTime(t0)
	succeeded := newMig("ok", "vm", v1.MigrationSucceeded, true)
	succeeded.CreationTimestamp = metav1.NewTime(t0.Add(10 * time.Minute))
	endOnly := newMig("end", "vm", v1.MigrationFailed, true)
	endOnly.CreationTimestamp = metav1.NewTime(t0.Add(20 * time.Minute))
	end := metav1.NewTime(t0.Add(25 * time.Minute))
	endOnly.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{EndTimestamp: &end}
	cases := []struct {
		name  string
		migs  []v1.VirtualMachineInstanceMigration
		count int
		last  time.Time
	}{
		{"failed workload-update migrations count", []v1.VirtualMachineInstanceMigration{
			failedAt("a", "vm", t0.Add(time.Minute), t0.Add(2*time.Minute), true),
			failedAt("b", "vm", t0.Add(3*time.Minute), t0.Add(4*time.Minute), true)}, 2, t0.Add(4 * time.Minute)},
		{"a user's failed migration does not", []v1.VirtualMachineInstanceMigration{
			failedAt("a", "vm", t0.Add(time.Minute), t0.Add(2*time.Minute), false)}, 0, time.Time{}},
		{"failures before the last success do not", []v1.VirtualMachineInstanceMigration{
			failedAt("a", "vm", t0.Add(time.Minute), t0.Add(2*time.Minute), true), succeeded,
			failedAt("b", "vm", t0.Add(11*time.Minute), t0.Add(12*time.Minute), true)}, 1, t0.Add(12 * time.Minute)},
		{"failures of an earlier VMI of the same name do not", []v1.VirtualMachineInstanceMigration{
			failedAt("a", "vm", t0.Add(-time.Hour), t0.Add(-time.Hour), true)}, 0, time.Time{}},
		{"without transitions the migration state's end is the time", []v1.VirtualMachineInstanceMigration{endOnly}, 1, end.Time},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := failuresOf(compact(vmi), MigrationsOf(CompactMigrations(c.migs)).Finished(KeyOf(&vmi)))
			if c.count > 0 {
				c.last = c.last.Add(time.Second) // rounded up: the API keeps whole seconds
			}
			if f.Count != c.count || !f.Last.Equal(c.last) {
				t.Fatalf("failures %+v, want %d at %v", f, c.count, c.last)
			}
		})
	}
}

func TestPlanBacksOffThenNeedsAttention(t *testing.T) {
	vmi := newVMI("vm", oldImage, migratable, onNode("n1"))
	vmi.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
	other := newVMI("fine", oldImage, migratable, onNode("n2"))
	migs := []v1.VirtualMachineInstanceMigration{failedAt("f1", "vm", t0, t0.Add(time.Second), true)}
	in := inputs([]v1.VirtualMachineInstance{vmi, other}, migs, both)
	in.PerNode, in.Backoff = 1, Backoff{Initial: time.Minute, Max: time.Hour, MaxFailures: 2}
	in.Now = t0.Add(40 * time.Second) // failed at 1s, read as 2s: backing off until 62s

	p := PlanUpdate(in)
	if mig, _ := names(p); len(mig) != 1 || mig[0] != "fine" || p.BackingOff != 1 {
		t.Fatalf("backing off: migrate %v, backing off %d", mig, p.BackingOff)
	}
	if p.RequeueAfter != 22*time.Second {
		t.Fatalf("requeue %v, want the end of the backoff (22s)", p.RequeueAfter)
	}
	in.Now = t0.Add(62 * time.Second)
	if mig, _ := names(PlanUpdate(in)); len(mig) != 2 {
		t.Fatalf("after the backoff: %v", mig)
	}

	migs = append(migs, failedAt("f2", "vm", t0.Add(2*time.Minute), t0.Add(3*time.Minute), true))
	in.Migrations = MigrationsOf(CompactMigrations(migs))
	in.Now = t0.Add(time.Hour)
	p = PlanUpdate(in)
	if mig, _ := names(p); len(mig) != 1 || len(p.NeedsAttention) != 1 || p.NeedsAttention[0].Failures != 2 {
		t.Fatalf("after 2 failures: migrate %v, attention %v", mig, p.NeedsAttention)
	}
	if p.Outdated != 2 {
		t.Fatalf("a VMI needing attention is still outdated: %d", p.Outdated)
	}
	in.Backoff.EvictAfterMaxFailures = true
	if _, ev := names(PlanUpdate(in)); len(ev) != 1 || ev[0] != "vm" {
		t.Fatalf("evictAfterMaxFailures: evicted %v", ev)
	}
	vmi.Labels = map[string]string{ChoiceKey: "LiveMigrate"}
	in.VMIs[0] = compact(vmi)
	if _, ev := names(PlanUpdate(in)); len(ev) != 0 {
		t.Fatalf("a VM that chose LiveMigrate is never evicted: %v", ev)
	}
}
