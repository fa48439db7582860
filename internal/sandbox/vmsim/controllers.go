package vmsim

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Cache indexes.
const (
	podsByCreator       = "vmsim.createdBy" // launcher pods by CreatedByLabel (VMI UID)
	podsByMigration     = "vmsim.migration" // target pods by MigrationAnnotation (migration name)
	migrationsByVMIName = "vmsim.vmiName"   // migrations by spec.vmiName
)

// conflictRetry is the requeue after a write lost a race with another writer: the
// cache is about to deliver the newer object anyway.
const conflictRetry = 20 * time.Millisecond

func setupIndexes(ctx context.Context, mgr ctrl.Manager) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &corev1.Pod{}, podsByCreator, func(o client.Object) []string {
		return nonEmpty(o.GetLabels()[CreatedByLabel])
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &corev1.Pod{}, podsByMigration, func(o client.Object) []string {
		return nonEmpty(o.GetAnnotations()[MigrationAnnotation])
	}); err != nil {
		return err
	}
	return idx.IndexField(ctx, &v1.VirtualMachineInstanceMigration{}, migrationsByVMIName, func(o client.Object) []string {
		return nonEmpty(o.(*v1.VirtualMachineInstanceMigration).Spec.VMIName)
	})
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// simulator is the controller shell around the pure planners.
type simulator struct {
	client client.Client
	opts   Options
	log    *slog.Logger
	nodes  nodeNames // for podless VMIs
}

func (s *simulator) setup(mgr ctrl.Manager) error {
	if err := ctrl.NewControllerManagedBy(mgr).Named("vmsim-vmi").
		For(&v1.VirtualMachineInstance{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToVMI)).
		Complete(reconcile.Func(s.reconcileVMI)); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("vmsim-migration").
		For(&v1.VirtualMachineInstanceMigration{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(podToMigration)).
		Watches(&v1.VirtualMachineInstance{}, handler.EnqueueRequestsFromMapFunc(s.vmiToMigrations)).
		Complete(reconcile.Func(s.reconcileMigration)); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("vmsim-vm").
		For(newUnstructuredVM()).
		Watches(&v1.VirtualMachineInstance{}, handler.EnqueueRequestsFromMapFunc(vmiToVM)).
		Complete(reconcile.Func(s.reconcileVM))
}

// podToVMI maps a launcher pod to the VMI controlling it.
func podToVMI(_ context.Context, o client.Object) []reconcile.Request {
	return controllerRequest(o, "VirtualMachineInstance")
}

// vmiToVM maps a VMI to the VM controlling it.
func vmiToVM(_ context.Context, o client.Object) []reconcile.Request {
	return controllerRequest(o, "VirtualMachine")
}

func controllerRequest(o client.Object, kind string) []reconcile.Request {
	ref := metav1.GetControllerOf(o)
	if ref == nil || ref.Kind != kind || ref.APIVersion != v1.GroupVersion.String() {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}}}
}

// podToMigration maps a target pod to its migration.
func podToMigration(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetAnnotations()[MigrationAnnotation]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// vmiToMigrations maps a VMI to its unfinished migrations.
func (s *simulator) vmiToMigrations(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1.VirtualMachineInstanceMigrationList
	if err := s.client.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{migrationsByVMIName: o.GetName()}); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for _, m := range list.Items {
		if !migrationFinished(m.Status.Phase) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: m.Namespace, Name: m.Name}})
		}
	}
	return reqs
}

// launcherImage is the current launcher image: virt-controller's, else the fallback.
func (s *simulator) launcherImage(ctx context.Context) (string, error) {
	var list appsv1.DeploymentList
	if err := s.client.List(ctx, &list, client.MatchingLabels{AppLabel: ControllerApp}); err != nil {
		return "", err
	}
	return currentLauncherImage(list.Items, s.opts.LauncherImage), nil
}

// podsOf lists the launcher pods a VMI created.
func (s *simulator) podsOf(ctx context.Context, namespace string, uid types.UID) ([]corev1.Pod, error) {
	var list corev1.PodList
	err := s.client.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{podsByCreator: string(uid)})
	return list.Items, err
}

// createPod creates a launcher pod; AlreadyExists means an earlier attempt made it.
func (s *simulator) createPod(ctx context.Context, pod *corev1.Pod) error {
	if err := s.client.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// deletePods deletes pods by name; already gone is fine.
func (s *simulator) deletePods(ctx context.Context, namespace string, names []string) error {
	for _, name := range names {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
		if err := s.client.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting pod %s/%s: %w", namespace, name, err)
		}
	}
	return nil
}

// done turns a write error into a reconcile result: a conflict is retried soon
// without logging, anything else is returned (and retried with backoff).
func done(err error) (reconcile.Result, error) {
	switch {
	case err == nil:
		return reconcile.Result{}, nil
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	default:
		return reconcile.Result{}, err
	}
}
