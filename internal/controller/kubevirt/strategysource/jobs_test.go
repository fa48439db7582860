package strategysource

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/dumpjob"
)

var t0 = time.Unix(10_000, 0)

func strategyCM(name, id string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: "kubevirt", UID: k8stypes.UID("uid-" + name),
		CreationTimestamp: metav1.NewTime(t0),
		Labels:            map[string]string{metadata.InstallStrategyLabel: ""},
		Annotations:       map[string]string{metadata.InstallStrategyIdentifierAnnotation: id},
	}}
}

func strategyJob(name, id string, attempt int, cond batchv1.JobConditionType, finished time.Time) batchv1.Job {
	job := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{
		metadata.InstallStrategyIdentifierAnnotation: id,
		dumpjob.AttemptAnnotation:                    strconv.Itoa(attempt),
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

func TestDecideJobs(t *testing.T) {
	cm := strategyCM("cm", "a")
	complete := strategyJob("j", "a", 0, batchv1.JobComplete, t0)
	running := strategyJob("j", "a", 0, "", t0)
	cases := []struct {
		name       string
		in         JobInputs
		create     bool
		attempt    int
		deletes    []string
		running    bool
		failure    bool
		requeueMin time.Duration
	}{
		{name: "nothing yet: start a Job", in: JobInputs{ID: "a"}, create: true},
		{name: "a fresh strategy recorded as accepted: finished Jobs go",
			in: JobInputs{ID: "a", InForce: cm, Fresh: true, Recorded: true, Jobs: []batchv1.Job{complete}}, deletes: []string{"j"}},
		{name: "a fresh strategy not recorded yet: its Job stays as its evidence",
			in: JobInputs{ID: "a", InForce: cm, Fresh: true, Jobs: []batchv1.Job{complete}}},
		{name: "a fresh strategy not recorded yet: a running Job stays too",
			in: JobInputs{ID: "a", InForce: cm, Fresh: true, Jobs: []batchv1.Job{running}}},
		{name: "monitoring changed: keep the stale strategy in force and regenerate",
			in: JobInputs{ID: "a", InForce: cm, Recorded: true}, create: true},
		{name: "a running Job is waited for and named",
			in: JobInputs{ID: "a", Jobs: []batchv1.Job{running}}, running: true},
		{name: "a running regeneration beside a stale strategy in force is not named",
			in: JobInputs{ID: "a", InForce: cm, Recorded: true, Jobs: []batchv1.Job{running}}},
		{name: "a failed Job is reported until its backoff ends",
			in:      JobInputs{ID: "a", Now: t0.Add(2 * time.Second), Jobs: []batchv1.Job{strategyJob("j", "a", 0, batchv1.JobFailed, t0)}},
			failure: true, requeueMin: 2 * time.Second},
		{name: "after the backoff the failed Job is replaced with the next attempt",
			in:     JobInputs{ID: "a", Now: t0.Add(time.Minute), Jobs: []batchv1.Job{strategyJob("j", "a", 1, batchv1.JobFailed, t0)}},
			create: true, attempt: 2, deletes: []string{"j"}},
		{name: "Jobs of an old target are deleted",
			in:     JobInputs{ID: "b", Jobs: []batchv1.Job{strategyJob("old", "a", 0, "", t0)}},
			create: true, deletes: []string{"old"}},
		{name: "a succeeded Job whose strategy is not cached yet is kept, and looked at again soon",
			in:         JobInputs{ID: "a", Now: t0.Add(time.Second), Jobs: []batchv1.Job{complete}},
			requeueMin: time.Second},
		{name: "a succeeded Job whose strategy never came (refused): the next attempt",
			in:     JobInputs{ID: "a", Now: t0.Add(SucceededGrace), Jobs: []batchv1.Job{complete}},
			create: true, attempt: 1, deletes: []string{"j"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := DecideJobs(c.in)
			if d.Create != c.create || d.Attempt != c.attempt {
				t.Fatalf("Create=%v attempt %d, want %v attempt %d", d.Create, d.Attempt, c.create, c.attempt)
			}
			if got := names(d.Delete); !slices.Equal(got, c.deletes) {
				t.Fatalf("Delete = %v, want %v", got, c.deletes)
			}
			if (d.Running != nil) != c.running || (d.Failure != nil) != c.failure {
				t.Fatalf("Running %v, Failure %+v; want running %v, failure %v", d.Running, d.Failure, c.running, c.failure)
			}
			if d.RequeueAfter < c.requeueMin {
				t.Fatalf("RequeueAfter = %v, want at least %v", d.RequeueAfter, c.requeueMin)
			}
		})
	}
}

func TestRetryDelayGrowsAndIsCapped(t *testing.T) {
	if dumpjob.RetryDelay(0) != 5*time.Second || dumpjob.RetryDelay(1) != 10*time.Second || dumpjob.RetryDelay(20) != 5*time.Minute {
		t.Fatalf("RetryDelay: %v %v %v", dumpjob.RetryDelay(0), dumpjob.RetryDelay(1), dumpjob.RetryDelay(20))
	}
}

func TestPodFailureMessageIsTheProgramsError(t *testing.T) {
	failed := corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "no config provided\n"}},
	}}}}
	succeeded := corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Message: "done"}},
	}}}}
	if got := dumpjob.PodFailureMessage([]corev1.Pod{succeeded, failed}); got != "no config provided" {
		t.Fatalf("PodFailureMessage = %q", got)
	}
	if got := dumpjob.PodFailureMessage([]corev1.Pod{succeeded}); got != "" {
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
	src := &Source{}
	first, err := src.decode(cm)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := src.decode(cm); again != first {
		t.Fatal("the same ConfigMap version was decoded twice")
	}
	cm.ResourceVersion = "2"
	if changed, _ := src.decode(cm); changed == first {
		t.Fatal("a new ConfigMap version reused the old decode")
	}
	cm.Data[strategy.ManifestsKey] = "corrupt"
	cm.ResourceVersion = "3"
	if _, err := src.decode(cm); err == nil {
		t.Fatal("a corrupt payload decoded")
	}
}

// One Job name per ID and attempt, within a label value's 63 characters.
func TestJobName(t *testing.T) {
	id := strings.Repeat("0123456789abcdef", 3)[:40]
	seen := map[string]bool{}
	for _, in := range []struct {
		id      string
		attempt int
	}{{id, 0}, {id, 1}, {"f" + id[1:], 0}, {id, 12345}} {
		n := dumpjob.Name(in.id, in.attempt)
		if len(n) > 63 || seen[n] || !strings.HasPrefix(n, dumpjob.NamePrefix+in.id[:dumpjob.IDPrefixLength]+"-") {
			t.Fatalf("%q: %d characters, not unique, or not prefixed with the ID's first characters", n, len(n))
		}
		seen[n] = true
	}
}

// A decoded strategy is dropped once unused for keepDecoded (the sweep runs
// on a timer; the test calls it with the time): at rest the operator holds
// its strategies as their ConfigMaps do. One still in use within the time
// is kept.
func TestDecodedStrategyDroppedWhenUnused(t *testing.T) {
	var c decodeCache
	defer c.sweep(t0.Add(time.Hour)) // stops the timer
	a, b := &strategy.Strategy{}, &strategy.Strategy{}
	c.put("a", a, t0)
	c.put("b", b, t0.Add(30*time.Second))
	if c.get("a", t0.Add(40*time.Second)) != a {
		t.Fatal("a strategy in use was not held")
	}
	c.sweep(t0.Add(80 * time.Second)) // b unused for 50 s, a for 40 s
	if c.held() != 2 {
		t.Fatalf("%d held, want both: neither was unused for %s", c.held(), keepDecoded)
	}
	c.sweep(t0.Add(95 * time.Second)) // b unused for 65 s
	if c.held() != 1 || c.get("b", t0.Add(95*time.Second)) != nil || c.get("a", t0.Add(95*time.Second)) != a {
		t.Fatal("the strategy unused past the time was kept, or the other dropped")
	}
	c.sweep(t0.Add(95*time.Second + keepDecoded))
	if c.held() != 0 || c.sweeping != nil {
		t.Fatalf("%d held (timer %v) once nothing was used for %s", c.held(), c.sweeping != nil, keepDecoded)
	}
}
