package kubevirt

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/workloads"
)

// phase is one step of the normal path.
type phase struct {
	// name is the phase's name, as docs/architecture.md lists it.
	name string
	run  func(r *Reconciler, ctx context.Context, s *scope) error
	// reason and what name a failure of the phase in Degraded.
	reason, what string
}

// phases are the normal path's phases, in order: the one list of them (the
// package doc and docs/architecture.md name them; TestPhasesAreDocumented
// holds the latter to this list). A phase whose input is missing is skipped
// and the others go on; an error stops the pass there, and whatever no phase
// concluded keeps its previous value in status (nextStatus).
var phases = []phase{
	// The finalizer goes on before anything is created, so an uninstall finds it all.
	{name: "finalizer", run: func(r *Reconciler, ctx context.Context, s *scope) error { return r.ensureFinalizer(ctx, s.kv) }},
	// The deployment config and ID (a problem when the spec or environment gives none).
	{name: "target", run: func(r *Reconciler, ctx context.Context, s *scope) error { r.observeTarget(ctx, s); return nil }},
	// The target's and the observed deployment's trusted strategies, each prepared.
	{name: "strategies", run: (*Reconciler).syncStrategies, reason: ReasonDeploymentFailed, what: "Getting the install strategy failed"},
	// The CRDs kept for their data: released, or deleted as the CR's annotation asks.
	{name: "retained", run: (*Reconciler).observeRetained, reason: ReasonDeploymentFailed, what: "Reading the retained CRDs failed"},
	// The certificates the deployments need, asked of the certificate controller.
	{name: "certificates", run: func(r *Reconciler, _ context.Context, s *scope) error { r.wantCertificates(s); return nil }},
	// spec.paused and spec.rolloutWindows.
	{name: "hold", run: func(r *Reconciler, _ context.Context, s *scope) error { r.holdRollout(s); return nil }},
	// An upgrade's checks before its first step; a preflight that cannot run holds
	// the rollout like one that fails (runPreflight says so), and the pass goes on.
	{name: "preflight", run: (*Reconciler).preflightPhase},
	// The target's objects step by step, or, held or without a target, what runs kept.
	{name: "objects", run: (*Reconciler).reconcileObjects, reason: ReasonDeploymentFailed, what: "An error occurred during deployment"},
	// Once every step is ready on the target: what it no longer has goes.
	{name: "finish", run: (*Reconciler).finishRollover},
}

// reconcileNormal installs, upgrades, or keeps the cluster on the CR's target:
// it runs the phases in order, and stops at the first error, which is the
// pass's problem unless it is transient and within its grace.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) error {
	for _, p := range phases {
		if err := p.run(r, ctx, s); err != nil {
			if p.reason == "" {
				return err
			}
			return r.retry(ctx, s, p.reason, p.what, err)
		}
		if p.name == "objects" {
			r.transient.Clear() // every phase with a write concluded
		}
	}
	return nil
}

// holdRollout is the hold phase: spec.paused and spec.rolloutWindows.
func (r *Reconciler) holdRollout(s *scope) {
	targetID := ""
	if s.cfg != nil {
		targetID = s.cfg.ID
	}
	hold, requeue := rolloutHold(s.kv, targetID, s.now)
	s.hold = hold
	s.requeueAfter(requeue)
}

// preflightPhase runs the preflight; one that cannot run holds the rollout
// like one that fails, what runs is still repaired, and it is tried again.
func (r *Reconciler) preflightPhase(ctx context.Context, s *scope) error {
	if err := r.runPreflight(ctx, s); err != nil {
		s.hold = preflightHold("the preflight could not run: " + errorSummary(err))
		_ = r.retry(ctx, s, ReasonPreflight, "The upgrade's preflight could not run", err)
		s.requeueAfter(preflightRecheck)
	}
	return nil
}

// retry records err as the pass's problem, unless it is a transient error
// still within its grace (then only logged), and returns it so the pass is
// retried with backoff.
func (r *Reconciler) retry(ctx context.Context, s *scope, reason, what string, err error) error {
	if r.transient.Degrade(err, s.now) {
		log.FromContext(ctx).Info("degraded", "reason", reason, "error", err.Error())
		s.fail(problem{Reason: reason, Message: what + ": " + errorSummary(err), Detail: errorDetail(err), Warning: reason})
	} else {
		log.FromContext(ctx).Info("retrying after a transient error", "error", err.Error())
	}
	return err
}

// observeTarget reads the target deployment config from the spec and the
// operator's environment, and what changed since the previous target.
func (r *Reconciler) observeTarget(ctx context.Context, s *scope) {
	cfg, err := deployid.FromKubeVirt(s.kv, r.Env)
	if err != nil {
		s.fail(problem{Reason: ReasonInvalidConfig, Message: err.Error(), Warning: ReasonInvalidConfig})
		return
	}
	s.cfg = cfg
	r.monitorAccounts.set(cfg.PotentialMonitorNamespaces(), cfg.MonitorAccount())
	prev := s.kv.Status
	s.takeover = observeTakeover(prev)
	if prev.TargetDeploymentID == cfg.ID {
		return
	}
	s.changedKeys = []string{}
	if previous, err := deployid.Parse(prev.TargetDeploymentConfig); err == nil {
		s.changedKeys = deployid.ChangedKeys(previous, cfg)
	}
	log.FromContext(ctx).Info("new target", "deploymentID", cfg.ID, "version", cfg.KubeVirtVersion, "why", targetChangeReason(s))
}

// targetChangeReason says why a new target is rolled out.
func targetChangeReason(s *scope) string {
	switch {
	case s.takeover != nil:
		return fmt.Sprintf("taking over KubeVirt %s from %s, deployment %s of another operator", s.takeover.Version, s.takeover.Registry, s.takeover.ID)
	case len(s.changedKeys) == 0:
		return "initial install"
	}
	return "changed: " + strings.Join(s.changedKeys, ", ")
}

// finishRollover runs once everything is ready on the target: the objects the
// target no longer has and the old strategies go. The observed state advances
// in nextStatus, after this, never earlier ("observed == target" means done).
func (r *Reconciler) finishRollover(ctx context.Context, s *scope) error {
	if !s.rolledOver() {
		return nil
	}
	// Orphans are looked for when the target is first reached, and again when
	// the strategy in use changes under the same ID (monitoring came or went).
	inUse := s.strategies.Target.Key
	if s.kv.Status.ObservedDeploymentID != s.cfg.ID || r.orphansCheckedFor != inUse {
		if err := r.deleteOrphans(ctx, s); err != nil {
			return r.retry(ctx, s, ReasonDeploymentFailed, "Deleting what the target no longer has failed", err)
		}
		r.orphansCheckedFor = inUse
	}
	for _, cm := range s.strategies.Obsolete {
		if err := r.Client.Delete(ctx, &cm); err != nil && !isNotFound(err) {
			return r.retry(ctx, s, ReasonDeploymentFailed, "Deleting old install strategies failed", fmt.Errorf("deleting old install strategy %s: %w", cm.Name, err))
		}
	}
	return nil
}

// deleteOrphans removes managed objects the target strategy no longer has.
func (r *Reconciler) deleteOrphans(ctx context.Context, s *scope) error {
	desired := s.target.desired
	live, err := apply.ListManaged(ctx, r.reader(), apply.ScopeOf(r.Namespace, []*deployid.Config{s.cfg, observedConfig(s.kv)}, desired), apply.KindsOf(desired.Others)...)
	if err != nil {
		return err
	}
	orphans := apply.Orphans(apply.Refs(apply.Steps(desired, apply.Install)), live)
	if len(orphans) == 0 {
		return nil
	}
	counts := r.countObjects(ctx, orphans)
	named := apply.DeleteRetainedNames(s.kv.Annotations)
	data := map[string]apply.CRDData{}
	for _, o := range orphans {
		if apply.RefOf(o).Kind == "CustomResourceDefinition" {
			data[o.GetName()] = apply.DataOf(o, counts.For, named)
		}
	}
	deleted, kept := apply.KeepData(orphans, data)
	for _, crd := range kept {
		if err := r.retain(ctx, s, crd, data[crd.GetName()]); err != nil {
			return err
		}
	}
	if len(deleted) == 0 {
		return nil
	}
	applier := &apply.Applier{Client: r.Client}
	if _, err := applier.Apply(ctx, apply.Deletions(deleted, "not in the target install strategy")); err != nil {
		return err
	}
	s.forget(deleted)
	s.emit(eventNormal, "DeletedObsoleteObjects", "Cleanup", fmt.Sprintf("Deleted %d objects the target install strategy no longer has", len(deleted)))
	return nil
}

// countObjects counts the user data in the orphaned CRDs (package workloads:
// a kind that cannot be counted is unknown, and its CRD kept).
func (r *Reconciler) countObjects(ctx context.Context, orphans []client.Object) workloads.Counts {
	var crds []string
	for _, o := range orphans {
		if apply.RefOf(o).Kind == "CustomResourceDefinition" {
			crds = append(crds, o.GetName())
		}
	}
	if len(crds) == 0 {
		return nil
	}
	return workloads.CountCRDs(ctx, r.APIReaderOrClient(), crds)
}
