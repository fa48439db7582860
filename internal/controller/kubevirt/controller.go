package kubevirt

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/activecr"
	"github.com/virt-operator/virt-operator/internal/controller/certificates"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/strategysource"
	"github.com/virt-operator/virt-operator/internal/controller/transient"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/storedversions"
	"github.com/virt-operator/virt-operator/internal/workloadcache"
)

// The operator manages the cluster's one KubeVirt CR, in its namespace; it
// watches them all to tell the others, in any namespace, that they are ignored.
// +kubebuilder:rbac:groups=kubevirt.io,resources=kubevirts,verbs=list;watch
// +kubebuilder:rbac:groups=kubevirt.io,resources=kubevirts/status,verbs=patch
// +kubebuilder:rbac:groups=kubevirt.io,namespace=kubevirt,resources=kubevirts,verbs=patch
// +kubebuilder:rbac:groups=kubevirt.io,namespace=kubevirt,resources=kubevirts/finalizers,verbs=update
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstances,verbs=list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles the active KubeVirt CR: it installs, upgrades and
// uninstalls the control plane its spec describes.
type Reconciler struct {
	Client client.Client
	// APIReader reads what the cache does not hold (objects outside the
	// operator's namespace, workload counts).
	APIReader client.Reader
	Namespace string
	Recorder  recorder.EventRecorder
	// Env is the operator's environment, read as upstream reads it.
	Env deployid.Env
	// OperatorVersion is written to status.operatorVersion.
	OperatorVersion string
	// ServiceAccount runs the install-strategy Job.
	ServiceAccount string
	Clock          clock.PassiveClock
	// ServerVersion reads the Kubernetes version (the preflight checks it); nil
	// skips that check.
	ServerVersion func() (*version.Info, error)
	// Resources reads discovery: a rollback that rewrites objects in another
	// version waits until the API server stores them in it. nil (unit tests
	// on a fake client) does not wait.
	Resources storedversions.Resources

	// Workloads are the VMIs and migrations, in the workload cache the
	// workload updater reads too; SetupWithManager makes one when none is
	// given, and a Reconciler without one (unit tests) lists them through
	// Client on each pass.
	Workloads Workloads

	// Certificates is where the certificates the deployments need are asked
	// of the certificate controller; nil: none runs (unit tests of other
	// phases), and the object phase does not wait for it.
	Certificates *certificates.Wants

	// What the reconciler keeps in memory, and why none of it belongs in the
	// status or the cache, is listed in the package documentation.
	source            *strategysource.Source
	sourceOnce        sync.Once
	written           writtenStatus
	transient         transient.Errors
	monitorAccounts   monitorAccounts
	orphansCheckedFor string
}

// SetupWithManager registers the controller and the watches that bring it back
// when a managed object changes.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
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
	b := ctrl.ControllerManagedBy(mgr).Named("kubevirt").For(&v1.KubeVirt{}, ctrl.WithPredicates(notStatusOnly))
	return r.watchManaged(b).WatchesRawSource(r.migrationEvents()).Complete(r)
}

// Reconcile brings the KubeVirt CR named by req and the cluster in line. The
// pass observes into a scope, its phases act on other objects and record what
// they did there, and the deferred end derives the whole status from the scope
// (nextStatus), patches it once, and only then emits the pass's Events.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (result reconcile.Result, err error) {
	all := &v1.KubeVirtList{}
	if err := r.Client.List(ctx, all); err != nil {
		return reconcile.Result{}, err
	}
	kv := findKubeVirt(all.Items, req.Namespace, req.Name)
	if kv == nil {
		return reconcile.Result{}, nil
	}
	r.written.refresh(kv)
	readVersion := kv.ResourceVersion
	s := &scope{kv: kv, now: r.Clock.Now()}
	if active := activecr.Of(all.Items, r.Namespace); active == nil || active.UID != kv.UID {
		if kv.DeletionTimestamp != nil {
			return reconcile.Result{}, nil
		}
		s.ignored = activecr.IgnoredMessage(kv, active, r.Namespace)
	}
	defer func() {
		next := nextStatus(kv.Status, s, r.OperatorVersion)
		patchErr := r.patchStatus(ctx, kv, next, readVersion)
		r.emitEvents(kv, eventsFor(kv.Status, next, s, patchErr == nil))
		err = errors.Join(err, patchErr)
		// An error is retried with backoff; the requeue a phase asked for
		// comes with a pass that succeeds. No resync otherwise: every wait
		// ends with an event of what it waits for, or asks for its own look
		// again, and the operator's own writes that its record missed are
		// recognised as its own (apply.OpRecord) instead of written again
		// as no-ops, which the API server announces to no one.
		if err == nil {
			result = reconcile.Result{RequeueAfter: s.Requeue}
		}
	}()
	switch {
	case s.ignored != "":
		return reconcile.Result{}, nil
	case kv.DeletionTimestamp != nil:
		return reconcile.Result{}, r.reconcileDelete(ctx, s)
	default:
		return reconcile.Result{}, r.reconcileNormal(ctx, s)
	}
}

func findKubeVirt(all []v1.KubeVirt, namespace, name string) *v1.KubeVirt {
	for i := range all {
		if all[i].Namespace == namespace && all[i].Name == name {
			return all[i].DeepCopy()
		}
	}
	return nil
}

// patchStatus writes next as the CR's status, only when it differs from the
// status kv was read with (at readVersion; the pass's metadata patches may
// have moved kv's resourceVersion since).
func (r *Reconciler) patchStatus(ctx context.Context, kv *v1.KubeVirt, next v1.KubeVirtStatus, readVersion string) error {
	publishMetrics(&next)
	if equality.Semantic.DeepEqual(kv.Status, next) {
		return nil
	}
	original := kv.DeepCopy()
	updated := kv.DeepCopy()
	updated.Status = next
	err := r.Client.Status().Patch(ctx, updated, client.MergeFrom(original))
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	r.written.remember(updated, readVersion, kv.ResourceVersion)
	return nil
}

// emitEvents records the pass's Events on the CR.
func (r *Reconciler) emitEvents(kv *v1.KubeVirt, events []kvEvent) {
	if r.Recorder == nil {
		return
	}
	for _, e := range events {
		r.Recorder.Eventf(kv, nil, e.Type, e.Reason, e.Action, "%s", e.Message)
	}
}

// ensureFinalizer adds the finalizer (and drops the legacy one) in its own
// metadata patch.
func (r *Reconciler) ensureFinalizer(ctx context.Context, kv *v1.KubeVirt) error {
	if controllerutil.ContainsFinalizer(kv, metadata.KubeVirtFinalizer) && !controllerutil.ContainsFinalizer(kv, metadata.LegacyKubeVirtFinalizer) {
		return nil
	}
	// The patch is sent from a copy: its response carries the stored status,
	// which must not replace the status this pass has computed so far. The
	// optimistic lock keeps a concurrent edit from being merged over.
	obj := kv.DeepCopy()
	patch := client.MergeFromWithOptions(kv.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(obj, metadata.KubeVirtFinalizer)
	controllerutil.RemoveFinalizer(obj, metadata.LegacyKubeVirtFinalizer)
	if err := r.Client.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("adding the KubeVirt finalizer: %w", err)
	}
	kv.Finalizers, kv.ResourceVersion = obj.Finalizers, obj.ResourceVersion
	return nil
}

func (r *Reconciler) removeFinalizer(ctx context.Context, kv *v1.KubeVirt) error {
	if !controllerutil.ContainsFinalizer(kv, metadata.KubeVirtFinalizer) && !controllerutil.ContainsFinalizer(kv, metadata.LegacyKubeVirtFinalizer) {
		return nil
	}
	patch := client.MergeFrom(kv.DeepCopy())
	controllerutil.RemoveFinalizer(kv, metadata.KubeVirtFinalizer)
	controllerutil.RemoveFinalizer(kv, metadata.LegacyKubeVirtFinalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, kv, patch))
}
