package workloadupdate

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/activecr"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/workloadcache"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstancemigrations,verbs=list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// It reads a VMI's launcher pods (in the VMI's namespace) before evicting them.
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// Nodes: where a migration could land.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch

// Workloads is what the updater reads of the VMIs and migrations: their
// compact forms, from the workload cache (package workloadcache).
type Workloads interface {
	// Synced: both kinds are listed; before, a plan would count what it has
	// not seen.
	Synced() bool
	VMIs() []*core.VMI
	VMI(core.Key) *core.VMI
	Migrations() core.Migrations
	Migration(namespace, name string) *core.Migration
	OnVMI(workloadcache.Handler[core.VMI])
	OnMigration(workloadcache.Handler[core.Migration])
}

// Reconciler moves the active KubeVirt's outdated VMIs onto the target launcher.
type Reconciler struct {
	Client client.Client
	// Workloads are the VMIs and migrations; SetupWithManager makes a
	// workload cache when none is given.
	Workloads Workloads
	// APIReader finds launcher pods: the cache holds pods of the operator's
	// namespace only.
	APIReader client.Reader
	// Namespace is the operator's: the active KubeVirt CR lives there.
	Namespace string
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock

	pending *pending
	notices *notices
	// gateClosed: the last reconcile found the gate closed; VMI and migration
	// events are dropped until the CR's status changes.
	gateClosed atomic.Bool
	// outdated is the last plan's outdated count: while it is 0, VMI events
	// that cannot make a VMI outdated change only the counts (vmiWindow).
	outdated atomic.Int64
	// lastPublish is when this process last wrote status.workloadUpdates (one
	// reconcile runs at a time): gauges alone are written at most every
	// core.CountsInterval.
	lastPublish time.Time
}

// pendingRecheck is how soon to look again while this process's own writes have
// not shown in the cache yet (an informer event normally comes first), or
// while the workload cache has not listed the VMIs and migrations yet.
const pendingRecheck = time.Second

// SetupWithManager registers the controller: the KubeVirt CR, its VMIs, the
// migrations and the nodes (where migrations can land) all map to the active
// CR, so one reconcile sees the whole picture.
// VMI and migration events are dropped while the gate is closed (the CR's next
// status change reopens it), VMI updates that change nothing the updater reads are
// dropped always, and VMI and migration events are gathered over vmiWindow and
// migrationWindow: those that can change a decision briefly or not at all,
// those that change only the counts for as long as the counts are held.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	r.init()
	if r.Workloads == nil {
		wc, err := workloadcache.New(mgr.GetConfig(), mgr.GetScheme(), mgr.GetRESTMapper(), mgr.GetLogger().WithName("workloadcache"))
		if err != nil {
			return err
		}
		if err := mgr.Add(wc); err != nil {
			return err
		}
		r.Workloads = wc
	}
	toActive := handler.EnqueueRequestsFromMapFunc(r.activeRequest)
	return ctrl.ControllerManagedBy(mgr).Named("workloadupdate").
		Watches(&v1.KubeVirt{}, toActive, ctrl.WithPredicates(notOwnStatusWrite)).
		WatchesRawSource(r.workloadEvents()).
		Watches(&corev1.Node{}, toActive, ctrl.WithPredicates(r.openGatePredicate(), targetChanged)).
		Complete(r)
}

// workloadEvents are the VMI and migration events from the workload cache,
// each passed (vmiPasses, migrationPasses) and gathered over its window
// (vmiWindow, migrationWindow) into the one request.
func (r *Reconciler) workloadEvents() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		req := r.activeRequest(context.Background(), nil)[0]
		r.Workloads.OnVMI(func(o, n *core.VMI) {
			if r.vmiPasses(o, n) {
				q.AddAfter(req, r.vmiWindow(o, n))
			}
		})
		r.Workloads.OnMigration(func(o, n *core.Migration) {
			if r.migrationPasses(o, n) {
				q.AddAfter(req, r.migrationWindow(o, n))
			}
		})
		return nil
	})
}

// init sets the defaults and the in-memory bookkeeping.
func (r *Reconciler) init() {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.pending = newPending()
	r.notices = newNotices()
}

// Reconcile plans one step for the active KubeVirt CR and carries it out when the
// gate is open and this operator is the CR's workload-update actor; the counts
// are published either way.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	kv, err := r.active(ctx)
	if err != nil || kv == nil {
		r.gateClosed.Store(true)
		setMetrics(core.Plan{}, 0)
		return reconcile.Result{}, err
	}
	target, blocked := targetOf(kv)
	r.gateClosed.Store(blocked != "")
	if target.image == "" { // nothing to compare launchers with; the CR's next status change brings us back
		setMetrics(core.Plan{}, 0)
		log.FromContext(ctx).V(1).Info("workload updates wait", "reason", blocked)
		return reconcile.Result{}, nil
	}
	actor, ignored := core.ActorOf(kv)
	settings := core.SettingsFrom(kv)
	if actor != v1.ActorVirtOperator {
		settings.Methods = core.Methods{} // observe and count only
		if blocked == "" {
			blocked = observeReason(actor, ignored)
		}
	}
	if !r.Workloads.Synced() {
		log.FromContext(ctx).V(1).Info("workload updates wait for the VMIs and migrations to be listed")
		return reconcile.Result{RequeueAfter: pendingRecheck}, nil
	}
	vmis := r.Workloads.VMIs()
	targets, err := r.targets(ctx, settings.Methods)
	if err != nil {
		return reconcile.Result{}, err
	}
	now := r.Clock.Now()
	settings.LastEvictionBatch = r.pending.lastEvictionBatch(settings.LastEvictionBatch)
	withPending, gaps := r.pending.view(now, target.image, r.Workloads.Migrations(), r.Workloads)
	plan := core.PlanUpdate(core.Inputs{
		VMIs: vmis, Migrations: withPending, TargetLauncherImage: target.image,
		Settings: settings, Now: now, Seed: rand.Uint64(),
		Evicting: gaps.evicting, Settling: gaps.settling, Targets: targets,
	})
	plansTotal.Inc()
	r.outdated.Store(int64(plan.Outdated))
	prev := r.pending.lastStatus(kv.Status.WorkloadUpdates)
	var done core.Done
	if blocked == "" {
		r.reportFailures(gaps.failed)
		r.announce(plan, settings.Backoff.EvictAfterMaxFailures)
		if plan.EvictionBatchAt != nil {
			// Write-ahead: the batch time is stored before any eviction, so a
			// restart right after them still honours the interval.
			var err error
			if prev, err = r.recordBatch(ctx, kv, prev, *plan.EvictionBatchAt); err != nil {
				return reconcile.Result{}, err
			}
		}
		done = r.execute(ctx, kv, plan, now)
	}
	setMetrics(plan, done.Created)
	report := core.Report{TargetID: target.id, Actor: actor, Paused: settings.Paused && actor == v1.ActorVirtOperator, Blocked: blocked}
	held, err := r.publish(ctx, kv, prev, core.NextStatus(prev, report, plan, done), now)
	if err != nil {
		return reconcile.Result{}, err
	}
	result := reconcile.Result{RequeueAfter: plan.RequeueAfter}
	if actor != v1.ActorVirtOperator {
		result.RequeueAfter = 0 // counting needs no resync: every change is an event
	}
	result.RequeueAfter = sooner(result.RequeueAfter, held)
	if r.pending.waiting() {
		result.RequeueAfter = sooner(result.RequeueAfter, pendingRecheck)
	}
	log.FromContext(ctx).V(1).Info("workload update", "actor", actor, "outdated", plan.Outdated, "created", done.Created,
		"evicted", done.Evicted, "aborted", len(plan.Abort), "blocked", blocked)
	return result, nil
}

// sooner is the earlier of two requeue delays, 0 standing for none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// targets are the nodes a migration could land on, read from the cache when
// migrations may be created (nil otherwise: nothing to check).
func (r *Reconciler) targets(ctx context.Context, m core.Methods) (*core.Targets, error) {
	if !m.LiveMigrate {
		return nil, nil
	}
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return core.NewTargets(nodes.Items), nil
}

// observeReason is status.workloadUpdates.blocked when another actor, or none,
// moves the VMs.
func observeReason(actor v1.WorkloadUpdateActor, ignored string) string {
	switch {
	case ignored != "":
		return ignored
	case actor == v1.ActorVirtController:
		return "virt-controller moves the VMs (spec.workloadUpdateStrategy.workloadUpdateMethods); virt-operator only counts them"
	}
	return "no workload-update method is set (spec.workloadUpdates.methods or spec.workloadUpdateStrategy.workloadUpdateMethods): VMs are not moved"
}

type target struct{ id, image string }

// targetOf is the launcher image of the deployment the operator targets, read from
// the config it recorded in status, and why the updater may not act now (empty:
// it may).
func targetOf(kv *v1.KubeVirt) (target, string) {
	if kv.Status.TargetDeploymentConfig == "" {
		return target{}, "no target deployment yet"
	}
	cfg, err := deployid.Parse(kv.Status.TargetDeploymentConfig)
	if err != nil {
		return target{}, "the target deployment config cannot be read: " + err.Error()
	}
	t := target{id: kv.Status.TargetDeploymentID, image: cfg.Image(deployid.Launcher)}
	if ok, why := core.Gate(kv); !ok {
		return t, why
	}
	return t, ""
}

func (r *Reconciler) active(ctx context.Context) (*v1.KubeVirt, error) {
	all := &v1.KubeVirtList{}
	if err := r.Client.List(ctx, all); err != nil {
		return nil, err
	}
	return activecr.Of(all.Items, r.Namespace), nil
}

// activeRequest maps every watched event to one key: the updater has one job.
func (r *Reconciler) activeRequest(context.Context, client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: r.Namespace, Name: "workload-updates"}}}
}

// recordBatch stores the eviction batch time in status.workloadUpdates and
// returns the status written.
func (r *Reconciler) recordBatch(ctx context.Context, kv *v1.KubeVirt, prev *v1.WorkloadUpdatesStatus, at time.Time) (*v1.WorkloadUpdatesStatus, error) {
	r.pending.batchSent(at)
	next := prev.DeepCopy()
	if next == nil {
		next = &v1.WorkloadUpdatesStatus{}
	}
	next.LastEvictionBatch = core.BatchTime(at)
	original := kv.DeepCopy()
	kv.Status.WorkloadUpdates = next
	if err := r.Client.Status().Patch(ctx, kv, client.MergeFrom(original)); err != nil {
		return nil, err
	}
	r.pending.statusWritten(next)
	r.lastPublish = r.Clock.Now()
	return next, nil
}

// publish writes status.workloadUpdates when it differs from what kv shows,
// unless only its gauges moved since this process last wrote prev, less than
// core.CountsInterval ago: then it returns how long the write is held.
// status.outdatedVirtualMachineInstanceWorkloads is virt-controller's: upstream's
// workload updater writes it whenever the CR is Deployed, so this operator does
// not (two writers of one field fight).
func (r *Reconciler) publish(ctx context.Context, kv *v1.KubeVirt, prev, next *v1.WorkloadUpdatesStatus, now time.Time) (held time.Duration, err error) {
	if equality.Semantic.DeepEqual(kv.Status.WorkloadUpdates, next) {
		r.pending.statusWritten(next)
		return 0, nil
	}
	if hold, after := core.HoldCounts(prev, next, r.lastPublish, now); hold {
		return after, nil
	}
	original := kv.DeepCopy()
	kv.Status.WorkloadUpdates = next
	err = r.Client.Status().Patch(ctx, kv, client.MergeFrom(original))
	switch {
	case apierrors.IsNotFound(err):
		return 0, nil
	case err != nil:
		return 0, err
	}
	r.pending.statusWritten(next)
	r.lastPublish = now
	return 0, nil
}
