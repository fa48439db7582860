package strategysource

import (
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy/dumpjob"
)

// JobInputs is what the operator knows about how to get the strategy of one
// deployment ID: the trusted strategy in force and whether it is fresh, and
// the strategy Jobs.
type JobInputs struct {
	ID string
	// InForce is the trusted ConfigMap in force for the ID (the newest
	// trusted one); nil when there is none.
	InForce *corev1.ConfigMap
	// Fresh: InForce was generated with the live monitoring answer.
	Fresh bool
	// Recorded: InForce's acceptance is in the status as read; the Job that
	// wrote it is its only other evidence until then, so it is kept.
	Recorded bool
	Jobs     []batchv1.Job
	Now      time.Time
}

// JobDecision is what to do about the strategy Jobs of one ID, as data.
type JobDecision struct {
	// Create starts a strategy Job; Attempt is its retry count.
	Create  bool
	Attempt int
	// Delete are finished Jobs, and Jobs of other IDs.
	Delete []batchv1.Job
	// Failure is the last Job's failure while the operator waits to retry.
	Failure *dumpjob.Outcome
	// Running is the Job generating the strategy, while none is in force.
	Running *batchv1.Job
	// RequeueAfter asks for another look when a retry is due.
	RequeueAfter time.Duration
}

// DecideJobs decides how to get the strategy of in.ID. A strategy in force
// whose monitoring answer differs from the live one is regenerated for the
// same ID (the self-healing upstream lacks), while it stays in force so
// nothing is torn down in between. A succeeded Job is deleted only once the
// strategy it wrote is recorded as accepted.
func DecideJobs(in JobInputs) JobDecision {
	var d JobDecision
	var running, succeeded, failed []batchv1.Job
	for _, job := range in.Jobs {
		if job.Annotations[metadata.InstallStrategyIdentifierAnnotation] != in.ID {
			d.Delete = append(d.Delete, job) // a Job for a target that is gone
			continue
		}
		switch outcome := dumpjob.OutcomeOf(&job); {
		case !outcome.Finished:
			running = append(running, job)
		case outcome.Failed:
			failed = append(failed, job)
		default:
			succeeded = append(succeeded, job)
		}
	}
	fresh := in.InForce != nil && in.Fresh
	switch {
	case fresh && in.Recorded:
		d.Delete = append(append(append(d.Delete, succeeded...), failed...), running...)
	case fresh:
		// Every Job of the ID is evidence of who wrote the strategy in force
		// until its acceptance is recorded.
	case len(running) > 0:
		// Wait for it; the Job watch brings the operator back.
		d.Delete = append(d.Delete, failed...)
		if in.InForce == nil {
			d.Running = &running[0]
		}
	case len(succeeded) > 0:
		last := latest(succeeded)
		if waitUntil := dumpjob.OutcomeOf(&last).FinishedAt.Add(SucceededGrace); in.Now.Before(waitUntil) {
			// The ConfigMap it wrote is not in the cache yet; look again shortly.
			d.RequeueAfter = min(time.Second, waitUntil.Sub(in.Now))
			return d
		}
		// What it wrote never arrived, or was refused: generate it again.
		d.Delete = append(append(d.Delete, succeeded...), failed...)
		newest := latest(slices.Concat(succeeded, failed))
		d.Create, d.Attempt = true, dumpjob.Attempt(&newest)+1
	case len(failed) > 0:
		last := latest(failed)
		outcome := dumpjob.OutcomeOf(&last)
		attempt := dumpjob.Attempt(&last)
		if retryAt := outcome.FinishedAt.Add(dumpjob.RetryDelay(attempt)); in.Now.Before(retryAt) {
			d.Failure = &outcome
			d.RequeueAfter = retryAt.Sub(in.Now)
			return d
		}
		d.Delete = append(d.Delete, failed...)
		d.Create, d.Attempt = true, attempt+1
	default:
		d.Create = true
	}
	return d
}

// SucceededGrace is how long a succeeded Job's strategy may take to reach the
// cache before the Job is taken to have written nothing usable.
const SucceededGrace = 30 * time.Second

// latest is the Job of the highest attempt.
func latest(jobs []batchv1.Job) batchv1.Job {
	last := jobs[0]
	for _, j := range jobs[1:] {
		if dumpjob.Attempt(&j) > dumpjob.Attempt(&last) {
			last = j
		}
	}
	return last
}
