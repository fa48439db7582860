package kubevirt

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/activecr"
	"github.com/virt-operator/virt-operator/internal/rollout"
	"github.com/virt-operator/virt-operator/internal/workloadcache"
	"github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// The virt-handler rollout leaves the pods of nodes with a live migration in
// place: it reads the migrations (and, for a pending one, its VMI's node) from
// the workload cache the workload updater reads too.
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstancemigrations,verbs=list;watch
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstances,verbs=list;watch

// Workloads are the VMIs and migrations the rollout reads, in their compact
// forms (package workloadcache).
type Workloads interface {
	VMIs() []*workloadupdate.VMI
	VMI(workloadupdate.Key) *workloadupdate.VMI
	AllMigrations() []*workloadupdate.Migration
	Migrations() workloadupdate.Migrations
	OnMigration(workloadcache.Handler[workloadupdate.Migration])
}

// workloads are r.Workloads, else (unit tests on a fake client) a reader
// that lists through the client on each call.
func (r *Reconciler) workloads() Workloads {
	if r.Workloads != nil {
		return r.Workloads
	}
	return workloadcache.Reader{Client: r.Client}
}

// handlerMigrations are the cluster's unfinished migrations as the rollout
// sees them, from the workload cache (no request to the API server; the
// unfinished ones are indexed). A migration that does not say its nodes yet
// (pending) takes its source from its VMI (status.migrationState when it is
// this migration's, else the node the VMI runs on). None while the migration
// CRD does not exist.
func (r *Reconciler) handlerMigrations() []rollout.Migration {
	w := r.workloads()
	var out []rollout.Migration
	for _, m := range w.Migrations().Unfinished {
		rm := rollout.Migration{Namespace: m.Namespace, Name: m.Name, StartedAt: time.Unix(m.Created, 0)}
		fromState(&rm, m.State)
		if rm.SourceNode == "" || rm.TargetNode == "" {
			if vmi := w.VMI(m.Key()); vmi != nil {
				if st := vmi.Migration; st != nil && st.UID == m.UID {
					fromState(&rm, st)
				}
				if rm.SourceNode == "" {
					rm.SourceNode = vmi.Node
				}
			}
		}
		if rm.SourceNode != "" || rm.TargetNode != "" {
			out = append(out, rm)
		}
	}
	return out
}

// fromState fills what m lacks from a migration state: its nodes, and its
// start (the wait counts from when the migration began moving, not from when
// it was queued).
func fromState(m *rollout.Migration, st *workloadupdate.MigrationState) {
	if st == nil {
		return
	}
	if m.SourceNode == "" {
		m.SourceNode = st.Source
	}
	if m.TargetNode == "" {
		m.TargetNode = st.Target
	}
	if st.Started != 0 && st.Started != zeroUnix {
		m.StartedAt = time.Unix(st.Started, 0)
	}
}

// zeroUnix is a start set to the zero time: none.
var zeroUnix = time.Time{}.Unix()

// expiredMessage is the Warning of a pod replaced under a migration that
// outlasted maxMigrationWait.
func expiredMessage(w rollout.NodeWait, p rollout.Policy) string {
	return fmt.Sprintf("replacing virt-handler on node %s although migration %s from or to it has not finished: "+
		"it has run past spec.handlerRollout.maxMigrationWait (%s, until %s)", w.Node, w.Migration, p.MaxMigrationWait,
		w.Until.UTC().Format(time.RFC3339))
}

// migrationEvents are the migration changes the rollout reads, from the
// workload cache, gathered over rolloutEventWindow like the virt-handler pod
// events. The cache starts announcing them once the migration CRD exists
// (this controller installs it): the controller does not wait for it.
func (r *Reconciler) migrationEvents() source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		r.Workloads.OnMigration(func(o, n *workloadupdate.Migration) {
			if o != nil && n != nil && !migrationMoved(o, n) {
				return
			}
			for _, req := range r.migrationRequest(ctx, nil) {
				q.AddAfter(req, rolloutEventWindow)
			}
		})
		return nil
	})
}

// migrationMoved: an update the rollout reads changed (the phase, which says
// whether it finished, or its nodes and start).
func migrationMoved(o, n *workloadupdate.Migration) bool {
	if o.Phase != n.Phase {
		return true
	}
	a, b := o.State, n.State
	if a == nil || b == nil {
		return a != b
	}
	return a.Source != b.Source || a.Target != b.Target || a.Started != b.Started
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
