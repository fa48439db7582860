package kubevirt

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

// WatchedKinds are the managed kinds whose changes bring the operator back:
// rollout progress (Deployments, DaemonSets), and out-of-band edits it reverts.
func WatchedKinds() []client.Object {
	return []client.Object{
		&appsv1.Deployment{}, &appsv1.DaemonSet{}, &policyv1.PodDisruptionBudget{},
		&corev1.Service{}, &corev1.Secret{}, &corev1.ConfigMap{},
		&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}, &rbacv1.Role{}, &rbacv1.RoleBinding{},
		&apiextensionsv1.CustomResourceDefinition{},
		&admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{},
		&apiregistrationv1.APIService{},
	}
}

// CachedNamespacedKinds are the namespaced kinds the cache holds only for the
// operator's namespace, so the operator's memory does not grow with the
// cluster's Secrets and ConfigMaps.
func CachedNamespacedKinds() []client.Object {
	return []client.Object{
		&appsv1.Deployment{}, &appsv1.DaemonSet{}, &policyv1.PodDisruptionBudget{},
		&corev1.Service{}, &corev1.Secret{}, &corev1.ConfigMap{},
		&rbacv1.Role{}, &rbacv1.RoleBinding{}, &batchv1.Job{}, &corev1.Pod{}, &appsv1.ControllerRevision{},
	}
}

func (r *Reconciler) watchManaged(b *builder.Builder) *builder.Builder {
	toActive := handler.EnqueueRequestsFromMapFunc(r.activeRequest)
	managed := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
		return metadata.IsManaged(o) || isStrategyObject(o)
	}))
	for _, kind := range WatchedKinds() {
		b = b.Watches(kind, toActive, managed)
	}
	// The strategy Jobs, and the monitoring ServiceAccount whose appearance
	// makes the operator regenerate the strategy.
	b = b.Watches(&batchv1.Job{}, toActive, managed)
	b = b.Watches(&corev1.ServiceAccount{}, toActive)
	// virt-handler's pods: the canary widens the moment its pod is Ready and
	// fails the moment it restarts, not at the next resync.
	b = b.Watches(&corev1.Pod{}, toActive, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[metadata.AppLabel] == "virt-handler"
	})))
	return b
}

func isStrategyObject(o client.Object) bool {
	_, isStrategyCM := o.GetLabels()[metadata.InstallStrategyLabel]
	return isStrategyCM || o.GetLabels()[metadata.AppLabel] == strategyDumperLabel
}

// activeRequest maps any event to the active KubeVirt CR.
func (r *Reconciler) activeRequest(ctx context.Context, _ client.Object) []reconcile.Request {
	all := &v1.KubeVirtList{}
	if err := r.Client.List(ctx, all); err != nil {
		return nil
	}
	active := ActiveKubeVirt(all.Items, r.Namespace)
	if active == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: active.Namespace, Name: active.Name}}}
}
