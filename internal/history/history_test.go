package history

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

var t0 = time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func TestRecordFollowsAnUpgrade(t *testing.T) {
	var h []v1.DeploymentRecord
	step := func(sec int, obs Observation) {
		obs.Now = at(sec)
		h = Record(h, obs)
	}
	install := Observation{TargetID: "a", TargetVersion: "v1.8.4"}
	step(0, withStage(install, StageInstallStrategy))
	step(4, withStage(install, StageApplying))
	step(9, Observation{TargetID: "a", TargetVersion: "v1.8.4", ObservedVersion: "v1.8.4", Done: true})
	if len(h) != 1 || h[0].Outcome != Succeeded || Duration(h[0]) != 9*time.Second || *h[0].Phases[0].Seconds != 4 || *h[0].Phases[1].Seconds != 5 {
		t.Fatalf("install: %+v", h)
	}

	up := Observation{TargetID: "b", TargetVersion: "v1.9.0", ObservedVersion: "v1.8.4", ChangedKeys: []string{"kubeVirtVersion"},
		WorkloadUpdates: &v1.WorkloadUpdatesStatus{DeploymentID: "a"}}
	step(100, withStage(up, StageInstallStrategy))
	step(102, withStage(up, StageApplying))
	step(103, withStage(up, StageHandlerCanary))
	step(115, withProblem(withStage(up, StageHandlerCanary), "CanaryCrashing: a pod restarted"))
	step(120, withStage(up, StageHandlerRollout))
	step(125, withStage(up, StageControlPlane))
	done := up
	done.Done, done.Stage = true, ""
	step(130, done)
	// The workload updater moved the VMs later; the next target finalizes the counts.
	next := Observation{TargetID: "c", TargetVersion: "v1.9.1", ObservedVersion: "v1.9.0",
		WorkloadUpdates: &v1.WorkloadUpdatesStatus{DeploymentID: "b", MigrationsCreated: 40, Evicted: 2}}
	step(500, withStage(next, StageInstallStrategy))

	if len(h) != 3 || h[0].DeploymentID != "c" || h[0].Outcome != InProgress || h[2].DeploymentID != "a" {
		t.Fatalf("newest first: %+v", ids(h))
	}
	b := h[1]
	if b.Outcome != Succeeded || b.FromVersion != "v1.8.4" || b.ToVersion != "v1.9.0" || Duration(b) != 30*time.Second ||
		b.LastProblem != "CanaryCrashing: a pod restarted" || b.VMIsMigrated != 40 || b.VMIsEvicted != 2 {
		t.Fatalf("upgrade record: %+v", b)
	}
	var got string
	for _, p := range b.Phases {
		got += fmt.Sprintf("%s=%d ", p.Name, *p.Seconds)
	}
	if want := "InstallStrategy=2 Applying=1 VirtHandlerCanary=17 VirtHandlerRollout=5 ControlPlane=5 "; got != want {
		t.Fatalf("phases %q, want %q", got, want)
	}
}

func TestRecordSupersededAndBounded(t *testing.T) {
	var h []v1.DeploymentRecord
	for i := range MaxEntries + 3 {
		h = Record(h, Observation{TargetID: fmt.Sprint(i), TargetVersion: "v", Stage: StageApplying, Now: at(i)})
	}
	if len(h) != MaxEntries {
		t.Fatalf("%d entries, want at most %d", len(h), MaxEntries)
	}
	if h[0].Outcome != InProgress || h[1].Outcome != Superseded || h[1].FinishedAt == nil || !h[1].FinishedAt.Time.Equal(at(MaxEntries+2)) {
		t.Fatalf("a replaced target is Superseded when the next starts: %+v", h[:2])
	}
	// At rest: the same observation changes nothing (no status write).
	again := Record(h, Observation{TargetID: fmt.Sprint(MaxEntries + 2), TargetVersion: "v", Stage: StageApplying, Now: at(999)})
	if !equality.Semantic.DeepEqual(again, h) {
		t.Fatalf("a repeated observation changed the history:\n%+v\n%+v", h, again)
	}
	if Record(nil, Observation{}) != nil {
		t.Fatal("no target, no history")
	}
}

func TestRecordFailedThenRetried(t *testing.T) {
	obs := Observation{TargetID: "x", TargetVersion: "v2", ObservedVersion: "v1", Stage: StageHandlerCanary, Now: at(0)}
	h := Record(nil, obs)
	obs.Failed, obs.Stage, obs.Now = true, "", at(20)
	h = Record(h, obs)
	if h[0].Outcome != Failed || h[0].FinishedAt == nil || Duration(h[0]) != 20*time.Second {
		t.Fatalf("failed: %+v", h[0])
	}
	obs.Failed, obs.Stage, obs.Now = false, StageHandlerCanary, at(60) // retried
	h = Record(h, obs)
	if h[0].Outcome != InProgress || h[0].FinishedAt != nil {
		t.Fatalf("retried: %+v", h[0])
	}
	obs.Done, obs.Now = true, at(90)
	if h = Record(h, obs); h[0].Outcome != Succeeded || Duration(h[0]) != 90*time.Second {
		t.Fatalf("retried then done: %+v", h[0])
	}
	// A failed one replaced by a new target stays Failed.
	h = Record(Record(nil, Observation{TargetID: "y", TargetVersion: "v", Failed: true, Now: at(0)}),
		Observation{TargetID: "z", TargetVersion: "v", Now: at(5)})
	if h[1].Outcome != Failed {
		t.Fatalf("a failed target replaced: %+v", h[1])
	}
}

func withStage(o Observation, s string) Observation   { o.Stage = s; return o }
func withProblem(o Observation, p string) Observation { o.Problem = p; return o }

func ids(h []v1.DeploymentRecord) []string {
	var out []string
	for _, r := range h {
		out = append(out, r.DeploymentID+":"+r.Outcome)
	}
	return out
}
