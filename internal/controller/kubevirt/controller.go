package kubevirt

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// The KubeVirt CR lives in the operator's namespace, so a Role is enough.
// +kubebuilder:rbac:groups=kubevirt.io,namespace=kubevirt,resources=kubevirts,verbs=get;list;watch
// +kubebuilder:rbac:groups=kubevirt.io,namespace=kubevirt,resources=kubevirts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,namespace=kubevirt,resources=events,verbs=create;patch

// Reconciler reconciles the KubeVirt CR in the operator's namespace.
type Reconciler struct {
	Client    client.Client
	Namespace string
	Recorder  recorder.EventRecorder
}

// SetupWithManager registers the controller with the manager.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("kubevirt").
		For(&v1.KubeVirt{}).
		Complete(r)
}

// Reconcile brings one KubeVirt CR's status in line with what the operator knows.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Namespace != r.Namespace {
		return ctrl.Result{}, nil
	}
	kv := &v1.KubeVirt{}
	if err := r.Client.Get(ctx, req.NamespacedName, kv); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	next := NextPhase(kv)
	if next == kv.Status.Phase {
		return ctrl.Result{}, nil // nothing to write at rest
	}
	patch := client.MergeFrom(kv.DeepCopy())
	kv.Status.Phase = next
	if err := r.Client.Status().Patch(ctx, kv, patch); err != nil {
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).Info("phase changed", "phase", next)
	return ctrl.Result{}, nil
}

// NextPhase is the phase the CR should be in: a new CR is Deploying, any other
// phase is kept until the install logic decides otherwise.
func NextPhase(kv *v1.KubeVirt) v1.KubeVirtPhase {
	if kv.Status.Phase == v1.KubeVirtPhaseUnset && kv.DeletionTimestamp == nil {
		return v1.KubeVirtPhaseDeploying
	}
	return kv.Status.Phase
}
