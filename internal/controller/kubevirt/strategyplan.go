package kubevirt

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// StrategyInputs is what the operator knows about the install strategy of one
// deployment ID: the cached ConfigMaps, the strategy Jobs, and where the
// monitoring ServiceAccount lives right now.
type StrategyInputs struct {
	ID               string
	ConfigMaps       []corev1.ConfigMap
	Jobs             []batchv1.Job
	LiveMonitoringNS string
	Now              time.Time
}

// StrategyPlan is the decision, as data: which ConfigMap to use, which Jobs to
// delete or create, and whether a failure must be reported.
type StrategyPlan struct {
	// Use is the ConfigMap in force for the ID (possibly stale about
	// monitoring while its replacement is generated); nil when there is none.
	Use *corev1.ConfigMap
	// CreateJob starts a strategy Job; Attempt is its retry count.
	CreateJob bool
	Attempt   int
	// DeleteJobs are finished Jobs, and Jobs of other IDs.
	DeleteJobs []batchv1.Job
	// Failure is the last Job's failure while the operator waits to retry.
	Failure *JobOutcome
	// Running is the Job generating the strategy, while no strategy is usable.
	Running *batchv1.Job
	// RequeueAfter asks for another look when a retry is due.
	RequeueAfter time.Duration
}

// PlanStrategy decides how to get the strategy for in.ID. A ConfigMap whose
// recorded monitoring namespace differs from the live answer is regenerated
// for the same ID (the self-healing that upstream lacks), while the stale one
// stays in use so nothing is torn down in between.
func PlanStrategy(in StrategyInputs) StrategyPlan {
	var plan StrategyPlan
	plan.Use = strategy.FindForID(in.ConfigMaps, in.ID)
	fresh := plan.Use != nil && strategy.Fresh(plan.Use, in.LiveMonitoringNS)

	var running, succeeded, failed []batchv1.Job
	for _, job := range in.Jobs {
		if job.Annotations[metadata.InstallStrategyIdentifierAnnotation] != in.ID {
			plan.DeleteJobs = append(plan.DeleteJobs, job) // a Job for a target that is gone
			continue
		}
		switch outcome := OutcomeOf(&job); {
		case !outcome.Finished:
			running = append(running, job)
		case outcome.Failed:
			failed = append(failed, job)
		default:
			succeeded = append(succeeded, job)
		}
	}
	plan.DeleteJobs = append(plan.DeleteJobs, succeeded...)

	switch {
	case fresh:
		plan.DeleteJobs = append(plan.DeleteJobs, failed...)
		plan.DeleteJobs = append(plan.DeleteJobs, running...)
	case len(running) > 0:
		// Wait for it; the Job watch brings the operator back.
		plan.DeleteJobs = append(plan.DeleteJobs, failed...)
		if plan.Use == nil {
			plan.Running = &running[0]
		}
	case len(succeeded) > 0:
		// The ConfigMap it wrote is not in the cache yet; look again shortly.
		plan.DeleteJobs = append(plan.DeleteJobs, failed...)
		plan.RequeueAfter = time.Second
	case len(failed) > 0:
		last := latestFailure(failed)
		outcome := OutcomeOf(&last)
		attempt := Attempt(&last)
		if retryAt := outcome.FinishedAt.Add(RetryDelay(attempt)); in.Now.Before(retryAt) {
			plan.Failure = &outcome
			plan.RequeueAfter = retryAt.Sub(in.Now)
			return plan
		}
		plan.DeleteJobs = append(plan.DeleteJobs, failed...)
		plan.CreateJob, plan.Attempt = true, attempt+1
	default:
		plan.CreateJob = true
	}
	return plan
}

func latestFailure(jobs []batchv1.Job) batchv1.Job {
	last := jobs[0]
	for _, j := range jobs[1:] {
		if Attempt(&j) > Attempt(&last) {
			last = j
		}
	}
	return last
}
