package kubevirt

import (
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/version"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
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

	// recentJobs remembers Jobs this process just created (jobKey → time).
	recentJobs sync.Map
	// decoded is the last strategy decoded from its ConfigMap.
	decoded decodedStrategy
	// progressWrittenAt is when status.handlerRollout last changed (one worker
	// reconciles, so no lock): progress alone is written at most once per
	// rollout.ProgressInterval.
	progressWrittenAt time.Time
	// written is the last status written, for reads the cache has not caught up on.
	written writtenStatus
	// transient tells apply errors to retry quietly from those to report.
	transient transientErrors
	// monitorAccounts filters the ServiceAccount watch.
	monitorAccounts monitorAccounts
	// orphansCheckedFor is the strategy ConfigMap (UID/resourceVersion) the last
	// orphan clean-up ran against.
	orphansCheckedFor string
}

// SetupWithManager registers the controller and the watches that bring it back
// when a managed object changes.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	b := ctrl.ControllerManagedBy(mgr).Named("kubevirt").For(&v1.KubeVirt{}, ctrl.WithPredicates(notStatusOnly))
	return r.watchManaged(b).Complete(r)
}

// Reconcile brings the KubeVirt CR named by req and the cluster in line.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	all := &v1.KubeVirtList{}
	if err := r.Client.List(ctx, all); err != nil {
		return reconcile.Result{}, err
	}
	kv := findKubeVirt(all.Items, req.Namespace, req.Name)
	if kv == nil {
		return reconcile.Result{}, nil
	}
	r.written.refresh(kv)
	active := ActiveKubeVirt(all.Items, r.Namespace)
	original := kv.DeepCopy()
	var (
		result reconcile.Result
		err    error
	)
	switch {
	case active == nil || active.UID != kv.UID:
		result, err = r.reconcileIgnored(ctx, kv, active)
	case kv.DeletionTimestamp != nil:
		result, err = r.reconcileDelete(ctx, kv)
	default:
		result, err = r.reconcileNormal(ctx, kv)
	}
	if patchErr := r.patchStatus(ctx, original, kv); patchErr != nil && err == nil {
		err = patchErr
	}
	return result, err
}

func findKubeVirt(all []v1.KubeVirt, namespace, name string) *v1.KubeVirt {
	for i := range all {
		if all[i].Namespace == namespace && all[i].Name == name {
			return all[i].DeepCopy()
		}
	}
	return nil
}

// reconcileIgnored marks a CR that is not the active one, touching nothing else.
func (r *Reconciler) reconcileIgnored(_ context.Context, kv, active *v1.KubeVirt) (reconcile.Result, error) {
	if kv.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	kv.Status.Conditions = Conditions(kv.Status.Conditions, State{
		Kind: StateIgnored, Reason: ReasonExistingDeployment, Message: IgnoredReason(kv, active, r.Namespace),
	}, r.now())
	return reconcile.Result{}, nil
}

// patchStatus writes the status once, and only when it changed. It is the one
// place the standard conditions are derived, from whatever the pass concluded.
func (r *Reconciler) patchStatus(ctx context.Context, original, kv *v1.KubeVirt) error {
	kv.Status.Conditions = StandardConditions(kv.Status.Conditions, kv.Generation, r.now())
	publishMetrics(&kv.Status)
	if equality.Semantic.DeepEqual(original.Status, kv.Status) {
		return nil
	}
	before := kv.ResourceVersion
	err := r.Client.Status().Patch(ctx, kv, client.MergeFrom(original))
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	}
	r.written.remember(kv, original.ResourceVersion, before)
	return nil
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

func (r *Reconciler) now() metav1.Time {
	return metav1.NewTime(r.Clock.Now().Truncate(time.Second))
}

// event records a Normal event about the CR.
func (r *Reconciler) event(kv *v1.KubeVirt, reason, action, note string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(kv, nil, "Normal", reason, action, "%s", note)
	}
}

// warning records a Warning event about the CR.
func (r *Reconciler) warning(kv *v1.KubeVirt, reason, action, note string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(kv, nil, "Warning", reason, action, "%s", note)
	}
}
