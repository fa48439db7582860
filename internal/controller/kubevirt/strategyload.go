package kubevirt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// loadedStrategy is the outcome of looking for the target's strategy.
type loadedStrategy struct {
	Strategy *strategy.Strategy // nil while it is being generated
	Plan     StrategyPlan
	// ConfigMaps are all install-strategy ConfigMaps, for the garbage collection.
	ConfigMaps []corev1.ConfigMap
	// JobProblem says why the running strategy Job's pod cannot start; "" if nothing stops it.
	JobProblem string
}

// loadStrategy finds the cached strategy for cfg's ID, or drives the Job that
// generates it. A corrupt ConfigMap is deleted so the next pass regenerates it.
func (r *Reconciler) loadStrategy(ctx context.Context, kv *v1.KubeVirt, cfg *deployid.Config) (*loadedStrategy, error) {
	cms, jobs, err := r.listStrategyObjects(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.recordMonitorNamespaces(ctx, cms, cfg.ID); err != nil {
		return nil, err
	}
	// The cache holds the default monitoring account in every namespace (the
	// operator's ServiceAccount cache); another account is read from the API.
	accounts := r.reader()
	if cfg.MonitorAccount() == deployid.DefaultMonitorAccount {
		accounts = r.Client
	}
	monitoringNS, err := strategy.DetectMonitorNamespace(ctx, accounts, cfg.PotentialMonitorNamespaces(), cfg.MonitorAccount())
	if err != nil {
		return nil, fmt.Errorf("detecting the monitoring namespace: %w", err)
	}
	plan := PlanStrategy(StrategyInputs{
		ID: cfg.ID, ConfigMaps: cms, Jobs: jobs, LiveMonitoringNS: monitoringNS, Now: r.Clock.Now(),
	})
	out := &loadedStrategy{Plan: plan, ConfigMaps: cms}
	if plan.Failure != nil {
		pods := &corev1.PodList{}
		if err := r.Client.List(ctx, pods, client.InNamespace(r.Namespace), client.MatchingLabels{batchv1.JobNameLabel: plan.Failure.JobName}); err != nil {
			return nil, err
		}
		if msg := PodFailureMessage(pods.Items); msg != "" {
			out.Plan.Failure.Message = fmt.Sprintf("Job %s: %s (%s)", plan.Failure.JobName, msg, plan.Failure.Message)
		}
	}

	if plan.Running != nil {
		if out.JobProblem, err = r.strategyJobProblem(ctx, plan.Running); err != nil {
			return nil, err
		}
		out.Plan.RequeueAfter = jobCheckInterval
	}

	for i := range plan.DeleteJobs {
		job := &plan.DeleteJobs[i]
		if err := r.Client.Delete(ctx, job, client.PropagationPolicy("Background")); client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("deleting finished strategy Job %s: %w", job.Name, err)
		}
	}
	if plan.CreateJob && r.jobJustCreated(cfg.ID, plan.Attempt) {
		// The cache has not seen the Job created a moment ago yet.
		plan.CreateJob, out.Plan.RequeueAfter = false, time.Second
	}
	if plan.CreateJob {
		job := StrategyJob(cfg, r.ServiceAccount, plan.Attempt)
		if err := r.Client.Create(ctx, job); err != nil {
			return nil, fmt.Errorf("creating the install-strategy Job: %w", err)
		}
		r.rememberJob(jobKey{cfg.ID, plan.Attempt})
		log.FromContext(ctx).Info("install-strategy Job created", "job", job.Name, "deploymentID", cfg.ID, "attempt", plan.Attempt)
		r.event(kv, "StrategyJobCreated", "Generate", fmt.Sprintf("Generating the install strategy for deployment ID %s (Job %s)", cfg.ID, job.Name))
	}
	if plan.Use == nil {
		return out, nil
	}
	s, err := r.decode(plan.Use)
	if errors.Is(err, strategy.ErrCorrupt) {
		r.warning(kv, "CorruptInstallStrategy", "Regenerate", fmt.Sprintf("ConfigMap %s is corrupt and is regenerated: %v", plan.Use.Name, err))
		if delErr := r.Client.Delete(ctx, plan.Use); client.IgnoreNotFound(delErr) != nil {
			return nil, delErr
		}
		out.Plan.RequeueAfter = 0
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	out.Strategy = s
	return out, nil
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

// jobKey names one strategy Job attempt for one deployment ID.
type jobKey struct {
	id      string
	attempt int
}

// recentJobWindow is how long a just-created Job may stay invisible in the
// cache before the operator creates another.
const recentJobWindow = 10 * time.Second

// rememberJob records a Job just created and forgets those past the window,
// so the map stays as small as the Jobs of the last few seconds.
func (r *Reconciler) rememberJob(k jobKey) {
	now := r.Clock.Now()
	r.recentJobs.Range(func(key, at any) bool {
		if now.Sub(at.(time.Time)) >= recentJobWindow {
			r.recentJobs.Delete(key)
		}
		return true
	})
	r.recentJobs.Store(k, now)
}

// jobJustCreated says whether this process created the same Job attempt a
// moment ago. It only avoids a duplicate Job while the cache catches up; after
// a restart the API state decides alone.
func (r *Reconciler) jobJustCreated(id string, attempt int) bool {
	v, ok := r.recentJobs.Load(jobKey{id, attempt})
	return ok && r.Clock.Now().Sub(v.(time.Time)) < recentJobWindow
}

// decodedStrategy caches the last decoded strategy: a rollout reconciles many
// times against the same ConfigMap, and decoding ~100 objects each time is
// wasted work. Nothing downstream modifies it (apply.Customize copies).
type decodedStrategy struct {
	mu  sync.Mutex
	key string // ConfigMap UID and resourceVersion
	s   *strategy.Strategy
}

func (r *Reconciler) decode(cm *corev1.ConfigMap) (*strategy.Strategy, error) {
	key := string(cm.UID) + "/" + cm.ResourceVersion
	r.decoded.mu.Lock()
	defer r.decoded.mu.Unlock()
	if r.decoded.key == key && r.decoded.s != nil {
		return r.decoded.s, nil
	}
	s, err := strategy.Decode(cm)
	if err != nil {
		return nil, err
	}
	r.decoded.key, r.decoded.s = key, s
	return s, nil
}
