// Package trust decides whether an install-strategy ConfigMap may be applied.
// A strategy is applied with the operator's rights, and a ConfigMap in the
// operator's namespace is something many can write (namespace editors,
// virt-controller's ServiceAccount, any dumper image), so nothing of one is
// applied until it is accepted, and anything the operator cannot vouch for is
// refused: a failure to vouch is a refusal, never an error that stops a pass.
//
// A ConfigMap claiming a deployment ID is accepted on one of three grounds:
//
//   - recorded: it is the ConfigMap status.installStrategies records as
//     accepted for that ID, with the same UID and content digest (only the
//     operator and cluster admins write that status);
//   - rendered: the operator renders the release itself, and the ConfigMap is
//     exactly its rendering for the ID's config and the live monitoring
//     answer;
//   - written by the Job: for a release only its own operator image renders,
//     the ConfigMap was created while the writer policy (WriterPolicy) was in
//     force, by then settled, after the operator's strategy Job for the ID.
//     The policy lets only a pod of the Job named for the ID, running as the
//     dumper ServiceAccount, create or change a strategy ConfigMap of that ID,
//     so nobody else could have written it.
//
// Whatever the grounds, a strategy then passes package ceiling before any of
// it is applied.
package trust

import (
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/dumpjob"
)

// How a strategy ConfigMap was accepted (status.installStrategies[].source).
const (
	// SourceRendered: its content is this operator's own rendering of a
	// release it knows, for the ID's config.
	SourceRendered = "Rendered"
	// SourceJob: the strategy Job the operator started for the ID wrote it.
	SourceJob = "Job"
)

// Evidence is what the operator knows when it vouches for a ConfigMap of ID.
type Evidence struct {
	// ID is the deployment ID the ConfigMap must claim.
	ID string
	// Accepted is status.installStrategies as last written.
	Accepted []v1.InstallStrategyRef
	// Rendered, for a release the operator renders itself, compares a
	// ConfigMap with its rendering for the ID's config and the live
	// monitoring answer; an error is a refusal. Nil for any other release.
	Rendered func(*corev1.ConfigMap) (bool, error)
	// Jobs are the strategy Jobs listed.
	Jobs []batchv1.Job
	// PolicySince is since when the writer policy has been in force as the
	// operator wrote it (zero: it is not).
	PolicySince time.Time
}

// Verdict is the decision on one ConfigMap.
type Verdict struct {
	Trusted bool
	// Source is the ground of an acceptance (SourceRendered, SourceJob).
	Source string
	// Why says why a ConfigMap is refused, for the Warning that names it.
	Why string
}

// PolicySettle is how long the writer policy must have been in force before a
// ConfigMap it admitted is believed: the API server's admission plugin takes
// up a new or changed policy within about a second.
const PolicySettle = 10 * time.Second

// Decide vouches for cm, which claims ev.ID, or refuses it.
func Decide(cm *corev1.ConfigMap, ev Evidence) Verdict {
	if cm.Annotations[metadata.InstallStrategyIdentifierAnnotation] != ev.ID {
		return Verdict{Why: "it claims another deployment ID"}
	}
	for _, ref := range ev.Accepted {
		if ref.DeploymentID == ev.ID && ref.UID == string(cm.UID) {
			if ref.Digest == strategy.Digest(cm) {
				return Verdict{Trusted: true, Source: ref.Source}
			}
			return Verdict{Why: "its content changed since the operator accepted it"}
		}
	}
	if ev.Rendered != nil {
		same, err := ev.Rendered(cm)
		switch {
		case err != nil:
			return Verdict{Why: "it cannot be compared with this operator's rendering of its release: " + err.Error()}
		case !same:
			return Verdict{Why: "it is not this operator's rendering of its release for the deployment's config and the live monitoring namespace"}
		}
		return Verdict{Trusted: true, Source: SourceRendered}
	}
	return byJob(cm, ev)
}

// byJob vouches for the ConfigMap of a release the operator does not render:
// the writer policy was in force when it was created, and the operator's Job
// for the ID was there before it and had not finished.
func byJob(cm *corev1.ConfigMap, ev Evidence) Verdict {
	created := cm.CreationTimestamp.Time
	if ev.PolicySince.IsZero() {
		return Verdict{Why: "the writer policy that lets only the strategy Job write strategies is not in force"}
	}
	if settled := ev.PolicySince.Add(PolicySettle); created.Before(settled) {
		return Verdict{Why: fmt.Sprintf("it was created at %s, before the writer policy was in force (from %s)",
			created.UTC().Format(time.RFC3339), settled.UTC().Format(time.RFC3339))}
	}
	for i := range ev.Jobs {
		job := &ev.Jobs[i]
		if job.Annotations[metadata.InstallStrategyIdentifierAnnotation] != ev.ID || job.Name != dumpjob.Name(ev.ID, dumpjob.Attempt(job)) {
			continue
		}
		if created.Before(job.CreationTimestamp.Time) {
			continue
		}
		if done := finishedAt(job); !done.IsZero() && done.Before(created) {
			continue
		}
		return Verdict{Trusted: true, Source: SourceJob}
	}
	return Verdict{Why: "no strategy Job of the operator for its deployment ID was running when it was created"}
}

// finishedAt is when a Job completed or failed; zero while it runs.
func finishedAt(job *batchv1.Job) time.Time {
	for _, c := range job.Status.Conditions {
		if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}
