package kubevirt

import (
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

var t0 = time.Unix(10_000, 0)

func strategyCM(name, id, monitoring string) corev1.ConfigMap {
	return corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name:              name,
		CreationTimestamp: metav1.NewTime(t0),
		Labels:            map[string]string{metadata.InstallStrategyLabel: ""},
		Annotations: map[string]string{
			metadata.InstallStrategyIdentifierAnnotation: id,
			strategy.MonitorNamespaceAnnotation:          monitoring,
		},
	}}
}

func strategyJob(name, id string, attempt int, cond batchv1.JobConditionType, finished time.Time) batchv1.Job {
	job := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
		metadata.InstallStrategyIdentifierAnnotation: id,
		attemptAnnotation: strconv.Itoa(attempt),
	}}}
	if cond != "" {
		job.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue, Message: "boom", LastTransitionTime: metav1.NewTime(finished)}}
	}
	return job
}

func names(jobs []batchv1.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Name)
	}
	return out
}

func TestPlanStrategy(t *testing.T) {
	cases := []struct {
		name       string
		in         StrategyInputs
		use        string
		create     bool
		attempt    int
		deletes    []string
		failure    bool
		requeueMin time.Duration
	}{
		{name: "nothing yet: start a Job", in: StrategyInputs{ID: "a"}, create: true},
		{name: "a fresh ConfigMap is used and finished Jobs go",
			in:  StrategyInputs{ID: "a", ConfigMaps: []corev1.ConfigMap{strategyCM("cm", "a", "")}, Jobs: []batchv1.Job{strategyJob("j", "a", 0, batchv1.JobComplete, t0)}},
			use: "cm", deletes: []string{"j"}},
		{name: "monitoring appeared: keep the stale strategy in use and regenerate",
			in:  StrategyInputs{ID: "a", LiveMonitoringNS: "monitoring", ConfigMaps: []corev1.ConfigMap{strategyCM("cm", "a", "")}},
			use: "cm", create: true},
		{name: "a running Job is waited for",
			in: StrategyInputs{ID: "a", Jobs: []batchv1.Job{strategyJob("j", "a", 0, "", t0)}}},
		{name: "a failed Job is reported until its backoff ends",
			in:      StrategyInputs{ID: "a", Now: t0.Add(2 * time.Second), Jobs: []batchv1.Job{strategyJob("j", "a", 0, batchv1.JobFailed, t0)}},
			failure: true, requeueMin: 2 * time.Second},
		{name: "after the backoff the failed Job is replaced with the next attempt",
			in:     StrategyInputs{ID: "a", Now: t0.Add(time.Minute), Jobs: []batchv1.Job{strategyJob("j", "a", 1, batchv1.JobFailed, t0)}},
			create: true, attempt: 2, deletes: []string{"j"}},
		{name: "Jobs of an old target are deleted",
			in:     StrategyInputs{ID: "b", Jobs: []batchv1.Job{strategyJob("old", "a", 0, "", t0)}},
			create: true, deletes: []string{"old"}},
		{name: "a succeeded Job whose ConfigMap is not cached yet: look again soon",
			in:      StrategyInputs{ID: "a", Jobs: []batchv1.Job{strategyJob("j", "a", 0, batchv1.JobComplete, t0)}},
			deletes: []string{"j"}, requeueMin: time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := PlanStrategy(c.in)
			if got := ""; p.Use != nil {
				got = p.Use.Name
				if got != c.use {
					t.Fatalf("Use = %q, want %q", got, c.use)
				}
			} else if c.use != "" {
				t.Fatalf("Use = nil, want %q", c.use)
			}
			if p.CreateJob != c.create || p.Attempt != c.attempt {
				t.Fatalf("CreateJob=%v attempt %d, want %v attempt %d", p.CreateJob, p.Attempt, c.create, c.attempt)
			}
			if got := names(p.DeleteJobs); len(got) != len(c.deletes) || (len(got) > 0 && got[0] != c.deletes[0]) {
				t.Fatalf("DeleteJobs = %v, want %v", got, c.deletes)
			}
			if (p.Failure != nil) != c.failure {
				t.Fatalf("Failure = %+v, want %v", p.Failure, c.failure)
			}
			if p.RequeueAfter < c.requeueMin {
				t.Fatalf("RequeueAfter = %v, want at least %v", p.RequeueAfter, c.requeueMin)
			}
		})
	}
}

func TestRetryDelayGrowsAndIsCapped(t *testing.T) {
	if RetryDelay(0) != 5*time.Second || RetryDelay(1) != 10*time.Second || RetryDelay(20) != 5*time.Minute {
		t.Fatalf("RetryDelay: %v %v %v", RetryDelay(0), RetryDelay(1), RetryDelay(20))
	}
}

func TestPodFailureMessageIsTheProgramsError(t *testing.T) {
	failed := corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "no config provided\n"}},
	}}}}
	succeeded := corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Message: "done"}},
	}}}}
	if got := PodFailureMessage([]corev1.Pod{succeeded, failed}); got != "no config provided" {
		t.Fatalf("PodFailureMessage = %q", got)
	}
	if got := PodFailureMessage([]corev1.Pod{succeeded}); got != "" {
		t.Fatalf("a succeeded pod gave a failure message %q", got)
	}
}

func TestDecodeIsCachedPerConfigMapVersion(t *testing.T) {
	s := &strategy.Strategy{}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt-handler", Namespace: "kubevirt"}}
	if err := s.Add(sa); err != nil {
		t.Fatal(err)
	}
	cfg := &deployid.Config{Namespace: "kubevirt", KubeVirtVersion: "v1", Registry: "r"}
	cfg.ID = cfg.ComputeID()
	cm, err := strategy.Encode(s, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	cm.UID, cm.ResourceVersion = "uid-1", "1"
	r := &Reconciler{}
	first, err := r.decode(cm)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := r.decode(cm); again != first {
		t.Fatal("the same ConfigMap version was decoded twice")
	}
	cm.ResourceVersion = "2"
	if changed, _ := r.decode(cm); changed == first {
		t.Fatal("a new ConfigMap version reused the old decode")
	}
	cm.Data[strategy.ManifestsKey] = "corrupt"
	cm.ResourceVersion = "3"
	if _, err := r.decode(cm); err == nil {
		t.Fatal("a corrupt payload decoded")
	}
}

// One Job name per ID and attempt, within a label value's 63 characters.
func TestStrategyJobName(t *testing.T) {
	id := strings.Repeat("0123456789abcdef", 3)[:40]
	names := map[string]bool{}
	for _, in := range []struct {
		id      string
		attempt int
	}{{id, 0}, {id, 1}, {"f" + id[1:], 0}, {id, 12345}} {
		n := StrategyJobName(in.id, in.attempt)
		if len(n) > 63 || names[n] {
			t.Fatalf("%q: %d characters, or not unique", n, len(n))
		}
		names[n] = true
	}
}

// The running Job is named for a look at why its pod may not start only while
// no strategy is usable; with one in use (a monitoring regeneration) the
// install is not waiting on it.
func TestPlanStrategyNamesTheRunningJob(t *testing.T) {
	running := strategyJob("job-1", "id", 0, "", time.Time{})
	plan := PlanStrategy(StrategyInputs{ID: "id", Jobs: []batchv1.Job{running}, Now: t0})
	if plan.Running == nil || plan.Running.Name != "job-1" || plan.CreateJob {
		t.Fatalf("no strategy: running %v, create %v; want job-1 named, no new Job", plan.Running, plan.CreateJob)
	}
	stale := strategyCM("cm", "id", "")
	plan = PlanStrategy(StrategyInputs{ID: "id", ConfigMaps: []corev1.ConfigMap{stale}, Jobs: []batchv1.Job{running}, LiveMonitoringNS: "monitoring", Now: t0})
	if plan.Use == nil || plan.Running != nil {
		t.Fatalf("a strategy in use: use %v, running %v; want the ConfigMap used, no Job named", plan.Use, plan.Running)
	}
}
