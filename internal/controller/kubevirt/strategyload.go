package kubevirt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// observeStrategies lists the install-strategy ConfigMaps and Jobs, drives the
// Job that generates the target's strategy, and loads and prepares the
// target's strategy and, while it differs, the observed deployment's.
func (r *Reconciler) observeStrategies(ctx context.Context, s *scope) error {
	cms, jobs, err := r.listStrategyObjects(ctx)
	if err != nil {
		return err
	}
	s.strategies, s.strategiesRead = cms, true
	if s.cfg != nil {
		if err := r.loadTargetStrategy(ctx, s, jobs); err != nil {
			return err
		}
	}
	r.loadObservedStrategy(ctx, s)
	return nil
}

// loadTargetStrategy finds the cached strategy for the target's ID, or drives
// the Job that generates it. A corrupt ConfigMap is deleted so the next pass
// regenerates it.
func (r *Reconciler) loadTargetStrategy(ctx context.Context, s *scope, jobs []batchv1.Job) error {
	cfg := s.cfg
	if err := r.recordMonitorNamespaces(ctx, s.strategies, cfg.ID); err != nil {
		return err
	}
	// The cache holds the default monitoring account in every namespace (the
	// operator's ServiceAccount cache); another account is read from the API.
	accounts := r.reader()
	if cfg.MonitorAccount() == deployid.DefaultMonitorAccount {
		accounts = r.Client
	}
	monitoringNS, err := strategy.DetectMonitorNamespace(ctx, accounts, cfg.PotentialMonitorNamespaces(), cfg.MonitorAccount())
	if err != nil {
		return fmt.Errorf("detecting the monitoring namespace: %w", err)
	}
	trusted, refs, refused, err := r.trustedStrategies(s, cfg.ID, cfg, jobs)
	if err != nil {
		return err
	}
	if err := r.refuse(ctx, s, refused); err != nil {
		return err
	}
	plan := PlanStrategy(StrategyInputs{ID: cfg.ID, ConfigMaps: trusted, Jobs: jobs, LiveMonitoringNS: monitoringNS, Now: s.now})
	s.strategyPlan = plan
	s.requeueAfter(plan.RequeueAfter)
	if plan.Failure != nil {
		msg, err := r.strategyJobFailure(ctx, plan.Failure)
		if err != nil {
			return err
		}
		s.fail(problem{Reason: ReasonStrategyJobFailed, Message: "The install-strategy Job failed and is retried: " + msg, Warning: ReasonStrategyJobFailed})
	}
	if plan.Running != nil {
		blocked, err := r.strategyJobProblem(ctx, plan.Running)
		if err != nil {
			return err
		}
		if blocked != "" {
			s.fail(problem{Reason: ReasonStrategyJobBlocked, Message: "The install-strategy Job cannot run: " + blocked, Warning: ReasonStrategyJobBlocked})
		}
		s.requeueAfter(jobCheckInterval)
	}
	for i := range plan.DeleteJobs {
		job := &plan.DeleteJobs[i]
		if err := r.Client.Delete(ctx, job, client.PropagationPolicy("Background")); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting finished strategy Job %s: %w", job.Name, err)
		}
	}
	if plan.CreateJob {
		if err := r.createStrategyJob(ctx, s, plan.Attempt); err != nil {
			return err
		}
	}
	if plan.Use == nil {
		return nil
	}
	decoded, err := r.decode(plan.Use)
	if errors.Is(err, strategy.ErrCorrupt) {
		s.emit(eventWarning, "CorruptInstallStrategy", "Regenerate", fmt.Sprintf("ConfigMap %s is corrupt and is regenerated: %v", plan.Use.Name, err))
		return client.IgnoreNotFound(r.Client.Delete(ctx, plan.Use)) // its deletion brings the operator back
	}
	if err != nil {
		return err
	}
	s.accepted = append(s.accepted, acceptedRef(refs, plan.Use))
	s.target = &deployment{cfg: cfg, strategy: decoded}
	if s.target.prepared, err = apply.Prepare(decoded, cfg); err != nil {
		var patchErr *apply.PatchError
		if !errors.As(err, &patchErr) {
			return err
		}
		// Nothing of the target is written until the spec changes; what runs
		// is still kept (and its certificates).
		s.fail(problem{Reason: ReasonInvalidCustomization, Message: patchErr.Error(), Warning: ReasonInvalidCustomization})
	}
	return nil
}

// createStrategyJob creates the Job of this attempt. Its name is derived from
// the ID and the attempt, so a Job this process created a moment ago, which the
// cache does not show yet, is found by its name (AlreadyExists) and never made twice.
func (r *Reconciler) createStrategyJob(ctx context.Context, s *scope, attempt int) error {
	job := StrategyJob(s.cfg, r.ServiceAccount, attempt)
	err := r.Client.Create(ctx, job)
	switch {
	case apierrors.IsAlreadyExists(err):
		s.requeueAfter(time.Second) // created a moment ago; the cache catches up
		return nil
	case err != nil:
		return fmt.Errorf("creating the install-strategy Job: %w", err)
	}
	log.FromContext(ctx).Info("install-strategy Job created", "job", job.Name, "deploymentID", s.cfg.ID, "attempt", attempt)
	s.emit(eventNormal, "StrategyJobCreated", "Generate", fmt.Sprintf("Generating the install strategy for deployment ID %s (Job %s)", s.cfg.ID, job.Name))
	return nil
}

// strategyJobFailure is a failed Job's message, with its container's own
// error when the pod says it.
func (r *Reconciler) strategyJobFailure(ctx context.Context, failure *JobOutcome) (string, error) {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(r.Namespace), client.MatchingLabels{batchv1.JobNameLabel: failure.JobName}); err != nil {
		return "", err
	}
	if msg := PodFailureMessage(pods.Items); msg != "" {
		return fmt.Sprintf("Job %s: %s (%s)", failure.JobName, msg, failure.Message), nil
	}
	return failure.Message, nil
}

// loadObservedStrategy loads and prepares the strategy of the deployment that
// last rolled out everywhere, while the target differs from it: what runs is
// repaired from it while the rollout is held, and the certificates are kept
// from it while the target has no strategy. Anything missing or unreadable
// leaves it out (the target, once loaded, takes over).
func (r *Reconciler) loadObservedStrategy(ctx context.Context, s *scope) {
	prev := s.kv.Status
	if prev.ObservedDeploymentID == "" || (s.cfg != nil && prev.ObservedDeploymentID == s.cfg.ID) {
		return
	}
	cfg, err := deployid.Parse(prev.ObservedDeploymentConfig)
	if err != nil {
		log.FromContext(ctx).Info("the observed deployment config cannot be read", "error", err.Error())
		return
	}
	// Only an accepted one: a ConfigMap the operator cannot vouch for is not
	// applied, but neither deleted (it was applied once; it goes at rollover).
	trusted, refs, _, err := r.trustedStrategies(s, prev.ObservedDeploymentID, cfg, nil)
	cm := strategy.FindForID(trusted, prev.ObservedDeploymentID)
	if err != nil || cm == nil {
		return
	}
	decoded, err := r.decode(cm)
	if err != nil {
		log.FromContext(ctx).Info("the observed deployment's strategy cannot be read", "configMap", cm.Name, "error", err.Error())
		return
	}
	prepared, err := apply.Prepare(decoded, cfg)
	if err != nil {
		log.FromContext(ctx).Info("the observed deployment's strategy cannot be prepared", "error", err.Error())
		return
	}
	s.accepted = append(s.accepted, acceptedRef(refs, cm))
	s.observed = &deployment{cfg: cfg, strategy: decoded, prepared: prepared}
}

// acceptedRef is the acceptance of cm among refs.
func acceptedRef(refs []v1.InstallStrategyRef, cm *corev1.ConfigMap) v1.InstallStrategyRef {
	for _, ref := range refs {
		if ref.UID == string(cm.UID) {
			return ref
		}
	}
	return v1.InstallStrategyRef{}
}

// recordMonitorNamespaces annotates each ConfigMap of id that a release's own
// operator dumped (it records no MonitorNamespaceAnnotation) with the monitoring
// namespace read from its content, in cms too: without it the cache could never
// call such a strategy fresh and would regenerate it forever. A corrupt one is
// left for loadStrategy to replace.
func (r *Reconciler) recordMonitorNamespaces(ctx context.Context, cms []corev1.ConfigMap, id string) error {
	for i := range cms {
		cm := &cms[i]
		meta, ok := strategy.Meta(cm)
		if !ok || meta.ID != id || meta.MonitorRecorded || cm.DeletionTimestamp != nil {
			continue
		}
		s, err := r.decode(cm)
		if errors.Is(err, strategy.ErrCorrupt) {
			continue
		}
		if err != nil {
			return err
		}
		patch := client.MergeFrom(cm.DeepCopy())
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[strategy.MonitorNamespaceAnnotation] = strategy.MonitorNamespaceOf(s)
		if err := r.Client.Patch(ctx, cm, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("recording the monitoring namespace of install strategy %s: %w", cm.Name, err)
		}
	}
	return nil
}

// listStrategyObjects lists the install-strategy ConfigMaps and Jobs.
func (r *Reconciler) listStrategyObjects(ctx context.Context) ([]corev1.ConfigMap, []batchv1.Job, error) {
	cms := &corev1.ConfigMapList{}
	if err := r.Client.List(ctx, cms, client.InNamespace(r.Namespace), client.HasLabels{metadata.InstallStrategyLabel}); err != nil {
		return nil, nil, err
	}
	jobs := &batchv1.JobList{}
	if err := r.Client.List(ctx, jobs, client.InNamespace(r.Namespace), client.MatchingLabels{metadata.AppLabel: strategyDumperLabel}); err != nil {
		return nil, nil, err
	}
	return cms.Items, jobs.Items, nil
}

// decodedStrategies caches the last strategies decoded from their ConfigMaps:
// a rollout reconciles many times against the same one or two (the target's and
// the observed deployment's), and decoding ~100 objects each time is wasted
// work. Nothing downstream modifies them (apply.Prepare copies).
type decodedStrategies struct {
	mu      sync.Mutex
	entries [2]decodedEntry // the newest first
}

type decodedEntry struct {
	key string // ConfigMap name, UID and resourceVersion
	s   *strategy.Strategy
}

func (r *Reconciler) decode(cm *corev1.ConfigMap) (*strategy.Strategy, error) {
	key := cm.Name + "/" + string(cm.UID) + "/" + cm.ResourceVersion
	c := &r.decoded
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.key == key && e.s != nil {
			return e.s, nil
		}
	}
	s, err := strategy.Decode(cm)
	if err != nil {
		return nil, err
	}
	c.entries[1], c.entries[0] = c.entries[0], decodedEntry{key: key, s: s}
	return s, nil
}
