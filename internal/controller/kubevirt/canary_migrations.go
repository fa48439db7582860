package kubevirt

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/activecr"
	"github.com/virt-operator/virt-operator/internal/controller/coalesce"
	"github.com/virt-operator/virt-operator/internal/rollout"
	"github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// The virt-handler rollout leaves the pods of nodes with a live migration in
// place: it reads the migrations (and, for a pending one, its VMI's node) from
// the cache the workload updater fills.
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstancemigrations,verbs=list;watch
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstances,verbs=list;watch

// handlerMigrations are the cluster's unfinished migrations as the rollout
// sees them, from the cache (no request to the API server: the workload
// updater's informer holds them; finished ones, trimmed, are skipped). A
// migration that does not say its nodes yet (pending) takes its source from
// its VMI (status.migrationState when it is this migration's, else the node the
// VMI runs on). None while the migration CRD does not exist.
func (r *Reconciler) handlerMigrations(ctx context.Context) ([]rollout.Migration, error) {
	list := &v1.VirtualMachineInstanceMigrationList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing migrations: %w", err)
	}
	var out []rollout.Migration
	for i := range list.Items {
		m := &list.Items[i]
		if workloadupdate.IsFinished(m) {
			continue
		}
		rm := rollout.Migration{Namespace: m.Namespace, Name: m.Name, StartedAt: m.CreationTimestamp.Time}
		fromState(&rm, m.Status.MigrationState)
		if rm.SourceNode == "" || rm.TargetNode == "" {
			vmi := &v1.VirtualMachineInstance{}
			err := r.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.VMIName}, vmi)
			switch {
			case err == nil:
				if st := vmi.Status.MigrationState; st != nil && st.MigrationUID == m.UID {
					fromState(&rm, st)
				}
				if rm.SourceNode == "" {
					rm.SourceNode = vmi.Status.NodeName
				}
			case client.IgnoreNotFound(err) != nil && !meta.IsNoMatchError(err):
				return nil, fmt.Errorf("reading the VMI of migration %s: %w", rm, err)
			}
		}
		if rm.SourceNode != "" || rm.TargetNode != "" {
			out = append(out, rm)
		}
	}
	return out, nil
}

// fromState fills what m lacks from a migration state: its nodes, and its
// start (the wait counts from when the migration began moving, not from when
// it was queued).
func fromState(m *rollout.Migration, st *v1.VirtualMachineInstanceMigrationState) {
	if st == nil {
		return
	}
	if m.SourceNode == "" {
		m.SourceNode = st.SourceNode
	}
	if m.TargetNode == "" {
		m.TargetNode = st.TargetNode
	}
	if st.StartTimestamp != nil && !st.StartTimestamp.IsZero() {
		m.StartedAt = st.StartTimestamp.Time
	}
}

// expiredMessage is the Warning of a pod replaced under a migration that
// outlasted maxMigrationWait.
func expiredMessage(w rollout.NodeWait, p rollout.Policy) string {
	return fmt.Sprintf("replacing virt-handler on node %s although migration %s from or to it has not finished: "+
		"it has run past spec.handlerRollout.maxMigrationWait (%s, until %s)", w.Node, w.Migration, p.MaxMigrationWait,
		w.Until.UTC().Format(time.RFC3339))
}

// migrationInformerPoll is how often the migration source looks for the
// migration kind until its CRD exists (the KubeVirt controller installs it).
const migrationInformerPoll = 5 * time.Second

// migrationEvents is the source of the migration events that bring the
// KubeVirt controller back, gathered over rolloutEventWindow like the
// virt-handler pod events. It is not a source.Kind: that one holds the
// controller's start until the kind's informer has synced, and the migration
// CRD does not exist before this controller installs KubeVirt. This one
// returns at once and attaches to the cache's informer once the kind exists.
func (r *Reconciler) migrationEvents(informers cache.Informers) source.Source {
	return &migrationSource{informers: informers, r: r}
}

type migrationSource struct {
	informers cache.Informers
	r         *Reconciler
}

func (s *migrationSource) String() string { return "virtualmachineinstancemigrations (rollout waits)" }

func (s *migrationSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	h := coalesce.Handler(rolloutEventWindow, s.r.migrationRequest)
	go func() {
		var informer cache.Informer
		_ = wait.PollUntilContextCancel(ctx, migrationInformerPoll, true, func(ctx context.Context) (bool, error) {
			i, err := s.informers.GetInformer(ctx, &v1.VirtualMachineInstanceMigration{}, cache.BlockUntilSynced(false))
			informer = i
			return err == nil, nil
		})
		if informer == nil {
			return
		}
		_, _ = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				if m := asMigration(obj); m != nil {
					h.Create(ctx, event.CreateEvent{Object: m}, q)
				}
			},
			UpdateFunc: func(oldObj, newObj any) {
				o, n := asMigration(oldObj), asMigration(newObj)
				if o != nil && n != nil && migrationMoved(o, n) {
					h.Update(ctx, event.UpdateEvent{ObjectOld: o, ObjectNew: n}, q)
				}
			},
			DeleteFunc: func(obj any) {
				if m := asMigration(obj); m != nil {
					h.Delete(ctx, event.DeleteEvent{Object: m}, q)
				}
			},
		})
	}()
	return nil
}

func asMigration(obj any) *v1.VirtualMachineInstanceMigration {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, _ := obj.(*v1.VirtualMachineInstanceMigration)
	return m
}

// migrationMoved: an update the rollout reads changed (the phase, which says
// whether it finished, or its nodes and start).
func migrationMoved(o, n *v1.VirtualMachineInstanceMigration) bool {
	if o.Status.Phase != n.Status.Phase {
		return true
	}
	a, b := o.Status.MigrationState, n.Status.MigrationState
	if a == nil || b == nil {
		return a != b
	}
	return a.SourceNode != b.SourceNode || a.TargetNode != b.TargetNode || !equality.Semantic.DeepEqual(a.StartTimestamp, b.StartTimestamp)
}

// migrationRequest maps a migration event to the active KubeVirt CR while its
// virt-handler rollout may wait for migrations (a phase under way, or nodes
// waiting, as its status says): at rest, the workload updater's thousands of
// migrations cost the KubeVirt controller nothing.
func (r *Reconciler) migrationRequest(ctx context.Context, _ client.Object) []reconcile.Request {
	all := &v1.KubeVirtList{}
	// No copy: read only, and at rest this runs for every migration event.
	if err := r.Client.List(ctx, all, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	active := activecr.Of(all.Items, r.Namespace)
	if active == nil || !rolloutReadsMigrations(active.Status.HandlerRollout) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(active)}}
}

// rolloutReadsMigrations: a rollout in this state decides on migrations.
func rolloutReadsMigrations(st *v1.HandlerRolloutStatus) bool {
	return st != nil && (rollout.Phase(st.Phase).Active() || st.NodesWaitingForMigrations > 0)
}
