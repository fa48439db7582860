package strategysource

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/report"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/diagnose"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/dumpjob"
	"github.com/virt-operator/virt-operator/internal/strategy/trust"
)

// actOnJobs carries out a JobDecision: it reports a failed Job waiting for
// its retry and a Job whose pod cannot run, deletes finished Jobs and those of
// other IDs, and creates the next Job. A release rendered by its own operator
// image gets its Job only once the writer policy is in force and settled, so
// that what the Job writes can be told from a planted strategy.
func (s *Source) actOnJobs(ctx context.Context, in Input, d JobDecision, policySince time.Time, res *Result) error {
	res.RequeueAfter(d.RequeueAfter)
	if d.Failure != nil {
		msg, err := s.jobFailure(ctx, d.Failure)
		if err != nil {
			return err
		}
		res.Fail(report.Problem{Reason: ReasonJobFailed, Message: "The install-strategy Job failed and is retried: " + msg, Warning: ReasonJobFailed})
	}
	if d.Running != nil {
		blocked, err := s.jobStartProblem(ctx, d.Running)
		if err != nil {
			return err
		}
		if blocked != "" {
			res.Fail(report.Problem{Reason: ReasonJobBlocked, Message: "The install-strategy Job cannot run: " + blocked, Warning: ReasonJobBlocked})
		}
		res.RequeueAfter(jobCheckInterval)
	}
	for i := range d.Delete {
		job := &d.Delete[i]
		if err := s.Client.Delete(ctx, job, client.PropagationPolicy("Background")); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting finished strategy Job %s: %w", job.Name, err)
		}
	}
	if !d.Create {
		return nil
	}
	if !builtin(in.Target) {
		if policySince.IsZero() {
			return nil // writing the policy was reported; its write brings no event: writerPolicy requeued
		}
		if settled := policySince.Add(trust.PolicySettle); in.Now.Before(settled) {
			res.RequeueAfter(settled.Sub(in.Now))
			return nil
		}
	}
	return s.createJob(ctx, in.Target, d.Attempt, res)
}

// createJob creates the Job of this attempt. Its name is derived from the ID
// and the attempt, so a Job this process created a moment ago, which the cache
// does not show yet, is found by its name and never made twice; a Job of that
// name the operator did not create is reported, never waited on in silence.
func (s *Source) createJob(ctx context.Context, cfg *deployid.Config, attempt int, res *Result) error {
	job := dumpjob.New(cfg, s.ServiceAccount, attempt)
	err := s.Client.Create(ctx, job)
	switch {
	case apierrors.IsAlreadyExists(err):
		return s.nameTaken(ctx, job, res)
	case err != nil:
		return fmt.Errorf("creating the install-strategy Job: %w", err)
	}
	log.FromContext(ctx).Info("install-strategy Job created", "job", job.Name, "deploymentID", cfg.ID, "attempt", attempt)
	res.Emit(report.Normal, "StrategyJobCreated", "Generate", fmt.Sprintf("Generating the install strategy for deployment ID %s (Job %s)", cfg.ID, job.Name))
	return nil
}

// nameTaken tells a Job the operator created a moment ago (the cache catches
// up) from one someone else put in its way.
func (s *Source) nameTaken(ctx context.Context, want *batchv1.Job, res *Result) error {
	live := &batchv1.Job{}
	if err := s.APIReader.Get(ctx, client.ObjectKeyFromObject(want), live); err != nil {
		return client.IgnoreNotFound(err) // gone since: the next pass creates it
	}
	ours := live.Labels[metadata.AppLabel] == dumpjob.AppLabelValue &&
		live.Annotations[metadata.InstallStrategyIdentifierAnnotation] == want.Annotations[metadata.InstallStrategyIdentifierAnnotation]
	if ours {
		res.RequeueAfter(time.Second)
		return nil
	}
	res.Fail(report.Problem{Reason: ReasonJobBlocked, Warning: ReasonJobBlocked, Message: fmt.Sprintf(
		"The install-strategy Job cannot be created: a Job named %s that is not the operator's strategy Job is in the way; delete it", want.Name)})
	res.RequeueAfter(jobCheckInterval)
	return nil
}

// jobFailure is a failed Job's message, with its container's own error when
// the pod says it.
func (s *Source) jobFailure(ctx context.Context, failure *dumpjob.Outcome) (string, error) {
	pods := &corev1.PodList{}
	if err := s.Client.List(ctx, pods, client.InNamespace(s.Namespace), client.MatchingLabels{batchv1.JobNameLabel: failure.JobName}); err != nil {
		return "", err
	}
	if msg := dumpjob.PodFailureMessage(pods.Items); msg != "" {
		return fmt.Sprintf("Job %s: %s (%s)", failure.JobName, msg, failure.Message), nil
	}
	return failure.Message, nil
}

// jobStartProblem reads what JobStartProblem needs: the Job's pods from the
// cache, its Events from the API.
func (s *Source) jobStartProblem(ctx context.Context, job *batchv1.Job) (string, error) {
	pods := &corev1.PodList{}
	if err := s.Client.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return "", fmt.Errorf("listing the pods of strategy Job %s: %w", job.Name, err)
	}
	events, err := diagnose.Events(ctx, s.APIReader, job, "")
	if err != nil {
		return "", err
	}
	return JobStartProblem(job, pods.Items, events), nil
}

// JobStartProblem says why a running strategy Job's pod does not run: a pod
// that cannot be scheduled, a container that cannot be pulled or created, or,
// with no pod at all, the Job controller's latest FailedCreate Event (a missing
// ServiceAccount, a quota, a policy). "" when nothing stops it.
func JobStartProblem(job *batchv1.Job, pods []corev1.Pod, events []corev1.Event) string {
	live := 0
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		live++
		if problem := diagnose.PodStartProblem(p); problem != "" {
			return fmt.Sprintf("pod %s %s", p.Name, problem)
		}
	}
	if live > 0 {
		return ""
	}
	if refused := diagnose.LastFailedCreate(events, job.UID, diagnose.JobController); refused != "" {
		return fmt.Sprintf("Job %s cannot create its pod: %s", job.Name, refused)
	}
	return ""
}

// liveMonitorNamespace is where monitoring is now for cfg. The cache holds
// the default monitoring account in every namespace (the operator's
// ServiceAccount cache); another account is read from the API.
func (s *Source) liveMonitorNamespace(ctx context.Context, cfg *deployid.Config) (string, error) {
	accounts := s.APIReader
	if cfg.MonitorAccount() == deployid.DefaultMonitorAccount {
		accounts = s.Client
	}
	return strategy.DetectMonitorNamespace(ctx, accounts, cfg.PotentialMonitorNamespaces(), cfg.MonitorAccount())
}
