package workloadupdate

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// execute carries out a plan: aborts first (they free slots), then migrations,
// then the eviction batch. A failed call is an Event on the VMI, never an abort of
// the rest: the next reconcile plans again from what the API shows.
//
// The migrations created are one Event on the KubeVirt CR per plan, not one
// per VMI as upstream's updater writes: a drain of 10,000 VMIs would write
// 10,000 Events beside its 10,000 migrations. Every plan's Event is alike,
// so the recorder makes them one Event with a count (a series);
// status.workloadUpdates.migrationsCreated counts the migrations, and each
// migration names its VMI.
func (r *Reconciler) execute(ctx context.Context, kv *v1.KubeVirt, plan core.Plan, now time.Time) core.Done {
	var done core.Done
	for _, a := range plan.Abort {
		r.abort(ctx, a, now)
	}
	for _, req := range plan.Migrate {
		if r.migrate(ctx, req, now) {
			done.Created++
		}
	}
	if done.Created > 0 {
		r.normal(kv, core.ReasonSuccessfulCreate, "CreateMigrations", core.MessageCreatedMigrations())
	}
	if plan.EvictionBatchAt != nil {
		done.Evicted = r.evictBatch(ctx, plan.Evict, now)
		done.EvictionBatchAt = plan.EvictionBatchAt
	}
	if done.Created > 0 {
		migrationsCreated.Add(float64(done.Created))
	}
	if done.Evicted > 0 {
		evictions.Add(float64(done.Evicted))
	}
	return done
}

func (r *Reconciler) migrate(ctx context.Context, req core.MigrationRequest, now time.Time) bool {
	m := req.Migration()
	if err := r.Client.Create(ctx, m); err != nil {
		r.warn(vmiRef(req.VMI.Key(), req.VMI.UID), core.ReasonFailedCreate, "CreateMigration", core.MessageFailedCreate(err))
		return false
	}
	r.pending.migrationCreated(m, now)
	return true
}

// evictWorkers bounds the evictions of one batch in flight at a time.
const evictWorkers = 10

// evictBatch evicts the batch side by side: a batch is one short burst, not a
// queue of API calls that on a busy API server stretches towards the interval.
// It returns how many evictions were accepted.
func (r *Reconciler) evictBatch(ctx context.Context, vmis []*core.VMI, now time.Time) int {
	var evicted atomic.Int32
	var g errgroup.Group
	g.SetLimit(evictWorkers)
	for _, vmi := range vmis {
		g.Go(func() error {
			if r.evict(ctx, vmi, now) {
				evicted.Add(1)
			}
			return nil
		})
	}
	_ = g.Wait() // evict reports its failures as Events
	return int(evicted.Load())
}

// evict evicts vmi's launcher pod. An eviction restarts a VM, and a batch is
// at most BatchEvictionSize a BatchEvictionInterval: each keeps its Event on
// its VMI, as upstream's.
func (r *Reconciler) evict(ctx context.Context, vmi *core.VMI, now time.Time) bool {
	ref := vmiRef(vmi.Key(), vmi.UID)
	pod, err := r.launcherPod(ctx, vmi)
	if err != nil || pod == nil {
		r.warn(ref, core.ReasonFailedEvict, "Evict", core.MessageNoLauncherPod(err))
		return false
	}
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
	if err := r.Client.SubResource("eviction").Create(ctx, pod, eviction); err != nil && !apierrors.IsNotFound(err) {
		r.warn(ref, core.ReasonFailedEvict, "Evict", core.MessageFailedEvict(err))
		return false
	}
	r.pending.vmiEvicted(vmi, now)
	r.normal(ref, core.ReasonSuccessfulEvict, "Evict", core.MessageEvicted())
	return true
}

// vmiRef is a VMI as an Event names it.
func vmiRef(k core.Key, uid types.UID) *v1.VirtualMachineInstance {
	return &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name, UID: uid}}
}

func (r *Reconciler) abort(ctx context.Context, a core.AbortRequest, now time.Time) {
	ref := vmiRef(a.VMI.Key(), a.VMI.UID)
	for _, m := range a.Migrations {
		obj := &v1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}}
		err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &m.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			r.warn(ref, core.ReasonFailedChangeAbortion, "AbortMigration", core.MessageFailedAbort(a.VMI.Name, err))
			continue
		}
		r.pending.migrationDeleted(m, now)
		r.normal(ref, core.ReasonSuccessfulChangeAbortion, "AbortMigration", core.MessageAborted(a.VMI.Name))
	}
}

// launcherPod is the VMI's live launcher pod: created for this VMI, not being
// deleted, preferring one the VMI lists as active.
func (r *Reconciler) launcherPod(ctx context.Context, vmi *core.VMI) (*corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(vmi.Namespace),
		client.MatchingLabels{metadata.AppLabel: metadata.LauncherApp, metadata.CreatedByLabel: string(vmi.UID)}); err != nil {
		return nil, fmt.Errorf("listing launcher pods: %w", err)
	}
	var found *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if slices.Contains(vmi.ActivePods, p.UID) || found == nil {
			found = p
		}
	}
	return found, nil
}

// reportFailures turns each workload-update migration seen failing into one
// Warning Event on its VMI: the VMI stays outdated and the core retries it
// later.
func (r *Reconciler) reportFailures(failed []*core.Migration) {
	for _, m := range failed {
		r.warn(vmiRef(m.Key(), ""), core.ReasonFailedMigration, "Migrate", core.MessageMigrationFailed(m.Name))
	}
}

func (r *Reconciler) normal(obj runtime.Object, reason, action, note string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, reason, action, "%s", note)
	}
}

func (r *Reconciler) warn(obj runtime.Object, reason, action, note string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, action, "%s", note)
	}
}
