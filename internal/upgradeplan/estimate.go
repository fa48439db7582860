package upgradeplan

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/history"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/rollout"
	"github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// Estimate is the expected time of the rollout, part by part.
type Estimate struct {
	Total time.Duration
	Parts []EstimatePart
}

// EstimatePart is one stage's expected duration and what it rests on.
type EstimatePart struct {
	Name     string
	Duration time.Duration
	Basis    string
}

// Defaults where the cluster measured nothing yet.
const (
	defaultStrategy = 5 * time.Second
	stepOverhead    = time.Second // a reconcile between steps
)

func (e *Estimate) add(name string, d time.Duration, basis string) {
	e.Parts = append(e.Parts, EstimatePart{name, d, basis})
	e.Total += d
}

// estimate models the rollout: the strategy, then each restarting step; the
// virt-handler canary is a pod start plus the bake, the fast step one pod
// start per batch of fastStep pods. A pod start is what the cluster measured
// for the component pods running now (creation to Ready); a previous upgrade's
// recorded stages replace the model where they exist.
func estimate(in Input, restarts []Restart) Estimate {
	var e Estimate
	last := lastUpgrade(in.Current)
	strategy, basis := defaultStrategy, "default"
	if d, ok := phaseOf(lastFinished(in.Current), history.StageInstallStrategy); ok {
		strategy, basis = d, "the last deployment"
	}
	e.add("install strategy", strategy, basis)
	start, startBasis := podStart(in.Pods)
	if in.CurrentConfig != nil && in.CurrentConfig.ID != in.NewConfig.ID {
		// An upgrade's preflight pulls the target's images first: a pod start.
		e.add("preflight (image pre-pull)", stepOverhead+start, startBasis)
	}
	policy, err := rollout.PolicyFrom(in.NewKubeVirt.Spec.HandlerRollout)
	if err != nil {
		policy = rollout.DefaultPolicy()
	}
	for _, r := range restarts {
		if r.Step != apply.StepVirtHandler {
			replicas := int32(len(r.Pods))
			e.add("step "+r.Step, stepOverhead+time.Duration(max(replicas, 1))*start, startBasis)
			continue
		}
		if d, ok := phaseOf(last, history.StageHandlerCanary); ok {
			e.add("virt-handler canary", d, "the last upgrade")
		} else {
			e.add("virt-handler canary", start+policy.BakeTime, "a pod start plus the bake ("+policy.BakeTime.String()+")")
		}
		e.addChecks(last, r.Checks, start, startBasis)
		if d, ok := phaseOf(last, history.StageHandlerRollout); ok {
			e.add("virt-handler fast step", d, "the last upgrade")
			continue
		}
		n := len(r.Pods)
		step, _ := intstr.GetScaledValueFromIntOrPercent(&policy.FastStep, n, false)
		step = max(step, 1)
		batches := (max(n-policy.CanarySize, 0) + step - 1) / step
		e.add("virt-handler fast step", time.Duration(batches)*start, fmt.Sprintf("%d batches of %d, a pod start each", batches, step))
	}
	return e
}

// podStart is the median time from creation to Ready of the Ready pods.
func podStart(pods []corev1.Pod) (time.Duration, string) {
	var starts []time.Duration
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
				starts = append(starts, c.LastTransitionTime.Sub(p.CreationTimestamp.Time))
			}
		}
	}
	if len(starts) == 0 {
		return 10 * time.Second, "a pod start of 10s (no Ready pod measured)"
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	m := max(starts[len(starts)/2], 0)
	return m, fmt.Sprintf("a pod start of %s, the median of %d running pods", m, len(starts))
}

// lastFinished is the newest finished deployment, lastUpgrade the newest
// Succeeded one that upgraded (had a from version).
func lastFinished(kv *v1.KubeVirt) *v1.DeploymentRecord {
	if kv == nil {
		return nil
	}
	for i := range kv.Status.History {
		if kv.Status.History[i].Outcome == history.Succeeded {
			return &kv.Status.History[i]
		}
	}
	return nil
}

func lastUpgrade(kv *v1.KubeVirt) *v1.DeploymentRecord {
	if kv == nil {
		return nil
	}
	for i := range kv.Status.History {
		if r := &kv.Status.History[i]; r.Outcome == history.Succeeded && r.FromVersion != "" && r.FromVersion != r.ToVersion {
			return r
		}
	}
	return nil
}

// phaseOf sums a record's stage durations of that name.
func phaseOf(r *v1.DeploymentRecord, name string) (time.Duration, bool) {
	if r == nil {
		return 0, false
	}
	var d time.Duration
	found := false
	for _, p := range r.Phases {
		if p.Name == name && p.Seconds != nil {
			d += time.Duration(*p.Seconds) * time.Second
			found = true
		}
	}
	return d, found
}

// addChecks adds the data-plane checks' time after the bake: the last
// upgrade's, else a pod start per probe migration (the target's launcher);
// the checks that only watch run within the bake and add none.
func (e *Estimate) addChecks(last *v1.DeploymentRecord, checks []rollout.CheckPreview, start time.Duration, startBasis string) {
	if len(checks) == 0 {
		return
	}
	if d, ok := phaseOf(last, history.StageHandlerChecks); ok {
		e.add("virt-handler data-plane checks", d, "the last upgrade")
		return
	}
	for _, c := range checks {
		if c.Moves > 0 {
			e.add("virt-handler data-plane checks", time.Duration(c.Moves)*start,
				fmt.Sprintf("%d live migrations of the probe, a pod start each (%s); at most its timeout, %s", c.Moves, startBasis, c.Timeout))
		}
	}
}

// previewChecks are what the data-plane checks would do after the canary's
// bake on canary: on the cluster's VMIs and nodes, with the planned CR's
// policy and migration caps.
func previewChecks(in Input, canary []string) []rollout.CheckPreview {
	policy, err := rollout.PolicyFrom(in.NewKubeVirt.Spec.HandlerRollout)
	if err != nil {
		return nil
	}
	dp := rollout.DataPlane{VMIs: in.VMIs, Nodes: in.Nodes, Limits: workloadupdate.SettingsFrom(in.NewKubeVirt)}
	return rollout.PreviewChecks(policy, canary, dp, nil)
}

// canaryNodes are where a virt-handler rollout would start its canary.
func canaryNodes(in Input, live *appsv1.DaemonSet) []string {
	var pods []corev1.Pod
	for _, p := range in.Pods {
		if metav1.IsControlledBy(&p, live) {
			pods = append(pods, p)
		}
	}
	ready := map[string]bool{}
	for _, n := range in.Nodes {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready[n.Name] = c.Status == corev1.ConditionTrue
			}
		}
	}
	policy, err := rollout.PolicyFrom(in.NewKubeVirt.Spec.HandlerRollout)
	if err != nil {
		policy = rollout.DefaultPolicy()
	}
	obs := rollout.Observation{DaemonSet: live, Pods: pods, Target: metadata.TargetOf(in.NewConfig), NodeReady: ready}
	return rollout.CanaryCandidates(obs, policy.CanarySize)
}

func (e Estimate) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Estimate: %s for the control plane (workload updates follow)\n", e.Total.Round(time.Second))
	for _, p := range e.Parts {
		fmt.Fprintf(&b, "  %-28s %6s  %s\n", p.Name, p.Duration.Round(100*time.Millisecond), p.Basis)
	}
	return b.String()
}
