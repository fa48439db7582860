package vmsim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/controller/coalesce"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// upstreamUpdater plays upstream virt-controller's workload updater, as plainly
// as upstream: whenever the KubeVirt CR is Deployed with observed == target it
// writes status.outdatedVirtualMachineInstanceWorkloads, and when
// spec.workloadUpdateStrategy lists methods it migrates (parallelMigrationsPerCluster,
// default 5, no per-node cap, no backoff) and evicts (batchEvictionSize per
// batchEvictionInterval, the last batch kept in memory). It reuses the operator's
// planner with upstream's settings: the sandbox needs the behaviour, not a
// second implementation.
type upstreamUpdater struct {
	client client.Client
	// sim knows the current launcher image (virt-controller's flag).
	sim *simulator
	mu  sync.Mutex
	// lastBatch is upstream's in-memory lastDeletionBatch.
	lastBatch time.Time
	// created are migrations this process created that the cache may not list
	// yet (upstream's expectations): no plan until it does.
	created map[string]bool
}

var updaterKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "workload-updater"}}

func (u *upstreamUpdater) setup(mgr ctrl.Manager, window time.Duration) error {
	toKey := func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{updaterKey} }
	one := handler.EnqueueRequestsFromMapFunc(toKey)
	if window > 0 {
		one = coalesce.Handler(window, toKey)
	}
	return ctrl.NewControllerManagedBy(mgr).Named("vmsim-workload-updater").
		Watches(&v1.KubeVirt{}, one).
		Watches(&v1.VirtualMachineInstance{}, one).
		Watches(&v1.VirtualMachineInstanceMigration{}, one).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}). // one plan at a time, as upstream
		Complete(u)
}

func (u *upstreamUpdater) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	var kvs v1.KubeVirtList
	if err := u.client.List(ctx, &kvs); err != nil {
		return reconcile.Result{}, err
	}
	i := slices.IndexFunc(kvs.Items, func(kv v1.KubeVirt) bool { ok, _ := core.Gate(&kv); return ok })
	if i < 0 {
		return reconcile.Result{}, nil
	}
	kv := &kvs.Items[i]
	var vmis v1.VirtualMachineInstanceList
	if err := u.client.List(ctx, &vmis); err != nil {
		return reconcile.Result{}, err
	}
	var migs v1.VirtualMachineInstanceMigrationList
	if err := u.client.List(ctx, &migs); err != nil {
		return reconcile.Result{}, err
	}
	if u.waitingForCache(migs.Items) {
		return reconcile.Result{RequeueAfter: 50 * time.Millisecond}, nil
	}
	image, err := u.sim.launcherImage(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	s := core.UpstreamSettings(kv)
	u.mu.Lock()
	s.LastEvictionBatch = u.lastBatch
	u.mu.Unlock()
	plan := core.PlanUpdate(core.Inputs{VMIs: core.CompactVMIs(vmis.Items), Migrations: core.MigrationsOf(core.CompactMigrations(migs.Items)), TargetLauncherImage: image,
		Settings: s, Now: time.Now(), Seed: rand.Uint64()})
	if err := u.writeOutdated(ctx, kv, plan.Outdated); err != nil {
		return reconcile.Result{}, err
	}
	for _, a := range plan.Abort {
		for _, m := range a.Migrations {
			obj := &v1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}}
			_ = client.IgnoreNotFound(u.client.Delete(ctx, obj))
		}
	}
	for _, r := range plan.Migrate {
		m := r.Migration()
		if err := u.client.Create(ctx, m); err != nil {
			return reconcile.Result{}, fmt.Errorf("vmsim: creating a workload-update migration: %w", err)
		}
		u.mu.Lock()
		u.created[m.Name] = true
		u.mu.Unlock()
	}
	if plan.EvictionBatchAt != nil {
		u.mu.Lock()
		u.lastBatch = *plan.EvictionBatchAt
		u.mu.Unlock()
		for _, vmi := range plan.Evict {
			if err := u.evict(ctx, vmi); err != nil {
				return reconcile.Result{}, err
			}
		}
	}
	return reconcile.Result{RequeueAfter: plan.RequeueAfter}, nil
}

func (u *upstreamUpdater) waitingForCache(migs []v1.VirtualMachineInstanceMigration) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, m := range migs {
		delete(u.created, m.Name)
	}
	return len(u.created) > 0
}

// writeOutdated sets status.outdatedVirtualMachineInstanceWorkloads, as
// virt-controller does whatever the methods.
func (u *upstreamUpdater) writeOutdated(ctx context.Context, kv *v1.KubeVirt, n int) error {
	if cur := kv.Status.OutdatedVirtualMachineInstanceWorkloads; cur != nil && *cur == n {
		return nil
	}
	original := kv.DeepCopy()
	kv.Status.OutdatedVirtualMachineInstanceWorkloads = ptr.To(n)
	return client.IgnoreNotFound(u.client.Status().Patch(ctx, kv, client.MergeFrom(original)))
}

// evict evicts the VMI's active launcher pod.
func (u *upstreamUpdater) evict(ctx context.Context, vmi *core.VMI) error {
	var pods corev1.PodList
	if err := u.client.List(ctx, &pods, client.InNamespace(vmi.Namespace), client.MatchingFields{podsByCreator: string(vmi.UID)}); err != nil {
		return err
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !slices.Contains(vmi.ActivePods, pod.UID) || pod.DeletionTimestamp != nil {
			continue
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
		if err := u.client.SubResource("eviction").Create(ctx, pod, ev); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("vmsim: evicting %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	return nil
}

// startUpstreamUpdater adds the updater once the KubeVirt CRD is served (the
// sandbox does not install it; the operator's manifests do).
func startUpstreamUpdater(ctx context.Context, cfg *rest.Config, mgr ctrl.Manager, sim *simulator) {
	o := sim.opts
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		o.Log.Error("workload updater not started", "err", err)
		return
	}
	for {
		list, err := dc.ServerResourcesForGroupVersion(v1.GroupVersion.String())
		if err == nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "kubevirts" }) {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	u := &upstreamUpdater{client: mgr.GetClient(), sim: sim, created: map[string]bool{}}
	if err := u.setup(mgr, o.UpdaterWindow); err != nil {
		o.Log.Error("workload updater not started", "err", err)
		return
	}
	o.Log.Info("playing virt-controller's workload updater")
}
