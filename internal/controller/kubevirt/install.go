package kubevirt

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// reconcileNormal installs or upgrades towards the CR's target.
func (r *Reconciler) reconcileNormal(ctx context.Context, kv *v1.KubeVirt) (reconcile.Result, error) {
	cfg, err := deployid.FromKubeVirt(kv, r.Env)
	if err != nil {
		r.fail(kv, ReasonInvalidConfig, err.Error())
		return reconcile.Result{}, nil // a spec or environment change brings the operator back
	}
	r.monitorAccounts.set(cfg.PotentialMonitorNamespaces(), cfg.MonitorAccount())
	changed := r.setTarget(ctx, kv, cfg)
	strategyLoaded := false
	defer func() { recordHistory(kv, changed, strategyLoaded, r.Clock.Now()) }()
	kv.Status.OperatorVersion = r.OperatorVersion
	setDefaultArchitecture(kv)
	if kv.Status.Phase == v1.KubeVirtPhaseUnset {
		kv.Status.Phase = v1.KubeVirtPhaseDeploying
	}

	kv.Status.RolloutHold = rolloutHold(kv, r.Clock.Now())
	loaded, err := r.loadStrategy(ctx, kv, cfg)
	if err != nil {
		if r.transient.degrade(err, r.Clock.Now()) {
			r.fail(kv, ReasonDeploymentFailed, "Getting the install strategy failed: "+err.Error())
		}
		return reconcile.Result{}, err
	}
	switch {
	case loaded.Plan.Failure != nil:
		r.fail(kv, ReasonStrategyJobFailed, "The install-strategy Job failed and is retried: "+loaded.Plan.Failure.Message)
	case loaded.JobProblem != "":
		r.fail(kv, ReasonStrategyJobBlocked, "The install-strategy Job cannot run: "+loaded.JobProblem)
	}
	if loaded.Strategy == nil {
		if loaded.Plan.Failure == nil && loaded.JobProblem == "" {
			r.progressing(kv, false)
		}
		return reconcile.Result{RequeueAfter: loaded.Plan.RequeueAfter}, nil
	}
	strategyLoaded = true
	if err := r.ensureFinalizer(ctx, kv); err != nil {
		return reconcile.Result{}, err
	}
	preflightRequeue := time.Duration(0)
	if kv.Status.RolloutHold == nil {
		hold, requeue, err := r.runPreflight(ctx, kv, cfg, loaded.Strategy)
		if err != nil {
			if r.transient.degrade(err, r.Clock.Now()) {
				r.fail(kv, ReasonPreflight, "The upgrade's preflight could not run: "+err.Error())
			}
			return reconcile.Result{}, err
		}
		kv.Status.RolloutHold, preflightRequeue = hold, requeue
	}

	outcome, err := r.applyStrategy(ctx, kv, cfg, loaded.Strategy)
	var patchErr *apply.PatchError
	if errors.As(err, &patchErr) {
		r.fail(kv, ReasonInvalidCustomization, patchErr.Error())
		return reconcile.Result{}, nil // nothing was written; a spec change brings the operator back
	}
	if err != nil {
		if r.transient.degrade(err, r.Clock.Now()) {
			r.fail(kv, ReasonDeploymentFailed, "An error occurred during deployment: "+err.Error())
		} else {
			log.FromContext(ctx).Info("retrying after a transient error", "error", err.Error())
		}
		return reconcile.Result{}, err
	}
	r.transient.clear()
	requeue := minPositive(minPositive(loaded.Plan.RequeueAfter, outcome.RecheckAfter), holdRequeue(kv.Status.RolloutHold, r.Clock.Now()))
	requeue = minPositive(requeue, preflightRequeue)
	if !outcome.RolledOver {
		if outcome.ProblemReason != "" {
			// The rollout's own Event already told users; the condition says why
			// it holds (set alone, so no condition flips within one pass).
			kv.Status.Conditions = Conditions(kv.Status.Conditions, State{Kind: StateFailed, Reason: outcome.ProblemReason, Message: outcome.ProblemMessage}, r.now())
		} else {
			r.progressing(kv, outcome.Created)
		}
		return reconcile.Result{RequeueAfter: requeue}, nil
	}
	kv.Status.RolloutHold = nil // rolled over: nothing was held back

	if err := r.finishRollover(ctx, kv, cfg, loaded, outcome.Desired); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

// finishRollover runs once everything is ready on the target: objects the
// target no longer has and old strategies go, and only then is the observed
// state advanced (never earlier, so "observed == target" means done).
func (r *Reconciler) finishRollover(ctx context.Context, kv *v1.KubeVirt, cfg *deployid.Config, loaded *loadedStrategy, desired *strategy.Strategy) error {
	// Orphans are looked for when the target is first reached, and again when
	// the strategy in use changes under the same ID (monitoring came or went).
	inUse := ""
	if loaded.Plan.Use != nil {
		inUse = string(loaded.Plan.Use.UID) + "/" + loaded.Plan.Use.ResourceVersion
	}
	if kv.Status.ObservedDeploymentID != cfg.ID || r.orphansCheckedFor != inUse {
		if err := r.deleteOrphans(ctx, kv, desired, loaded.ConfigMaps); err != nil {
			return err
		}
		r.orphansCheckedFor = inUse
	}
	for _, cm := range strategy.Obsolete(loaded.ConfigMaps, cfg.ID, cfg.ID) {
		if err := r.Client.Delete(ctx, &cm); err != nil && !isNotFound(err) {
			return fmt.Errorf("deleting old install strategy %s: %w", cm.Name, err)
		}
	}
	if kv.Status.ObservedDeploymentID != cfg.ID {
		deployid.SetObserved(kv, cfg)
		r.event(kv, "Deployed", "Rollout", fmt.Sprintf("KubeVirt %s from %s is deployed (deployment ID %s)", cfg.KubeVirtVersion, cfg.Registry, cfg.ID))
	}
	kv.Status.Phase = v1.KubeVirtPhaseDeployed
	kv.Status.ObservedGeneration = &kv.Generation
	kv.Status.Conditions = Conditions(kv.Status.Conditions, State{Kind: StateAvailable, Created: true}, r.now())
	return nil
}

// setTarget records a new target and tells users which inputs changed; it
// returns the changed config keys (nil when the target is unchanged).
func (r *Reconciler) setTarget(ctx context.Context, kv *v1.KubeVirt, cfg *deployid.Config) []string {
	if kv.Status.TargetDeploymentID == cfg.ID {
		return nil
	}
	reason, changed := "initial install", []string{}
	if previous, err := deployid.Parse(kv.Status.TargetDeploymentConfig); err == nil {
		changed = deployid.ChangedKeys(previous, cfg)
		reason = "changed: " + strings.Join(changed, ", ")
	}
	deployid.SetTarget(kv, cfg)
	log.FromContext(ctx).Info("new target", "deploymentID", cfg.ID, "version", cfg.KubeVirtVersion, "why", reason)
	r.event(kv, "TargetChanged", "Rollout", fmt.Sprintf("Rolling out KubeVirt %s (deployment ID %s); %s", cfg.KubeVirtVersion, cfg.ID, reason))
	return changed
}

// setDefaultArchitecture writes status.defaultArchitecture, which virt-api's
// mutating webhook puts on every VMI that names no architecture (without it virt-api
// refuses VMIs as of an "unsupported architecture"): the CR's
// configuration.architectureConfiguration.defaultArchitecture when set, else the
// operator's own architecture if the field is still empty, as upstream.
func setDefaultArchitecture(kv *v1.KubeVirt) {
	if ac := kv.Spec.Configuration.ArchitectureConfiguration; ac != nil && ac.DefaultArchitecture != "" {
		kv.Status.DefaultArchitecture = ac.DefaultArchitecture
		return
	}
	if kv.Status.DefaultArchitecture == "" {
		kv.Status.DefaultArchitecture = runtime.GOARCH
	}
}

// progressing sets the in-flight conditions: Deploying on a first install,
// Updating when a previous version is still observed.
func (r *Reconciler) progressing(kv *v1.KubeVirt, created bool) {
	st := kv.Status
	state := State{Kind: StateDeploying, Created: created,
		TargetVersion: st.TargetKubeVirtVersion, TargetRegistry: st.TargetKubeVirtRegistry,
		ObservedVersion: st.ObservedKubeVirtVersion, ObservedRegistry: st.ObservedKubeVirtRegistry}
	if h := st.RolloutHold; h != nil && h.Step != "" {
		state.Reason, state.Message = h.Reason, "held before "+h.Step+": "+h.Message
	}
	if deployid.IsUpdating(kv) {
		state.Kind = StateUpdating
	}
	kv.Status.Conditions = Conditions(kv.Status.Conditions, state, r.now())
}

// fail sets Degraded with a message that names the problem.
func (r *Reconciler) fail(kv *v1.KubeVirt, reason, message string) {
	previous := findCondition(kv.Status.Conditions, v1.KubeVirtConditionDegraded)
	if previous == nil || previous.Reason != reason || previous.Message != message {
		r.warning(kv, reason, "Reconcile", message)
	}
	kv.Status.Conditions = Conditions(kv.Status.Conditions, State{Kind: StateFailed, Reason: reason, Message: message}, r.now())
}

func minPositive(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	default:
		return min(a, b)
	}
}
