package kubevirt

import (
	"context"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/activecr"
	"github.com/virt-operator/virt-operator/internal/controller/coalesce"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/preflight"
	"github.com/virt-operator/virt-operator/internal/strategy/dumpjob"
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

// ManagedClusterKinds are the cluster-scoped kinds of a strategy the operator
// reads through its cache; the cache holds only the managed ones (CRDs as
// metadata).
func ManagedClusterKinds() []client.Object {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	return []client.Object{
		&rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}, crd,
		&admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{},
		&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
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
	managed := builder.WithPredicates(predicate.NewPredicateFuncs(managedOrStrategy))
	for _, kind := range WatchedKinds() {
		h := toActive
		switch kind.(type) {
		case *appsv1.DaemonSet:
			h = coalesce.Handler(rolloutEventWindow, r.activeRequest)
		case *apiextensionsv1.CustomResourceDefinition:
			// Metadata only, as the plan reads CRDs (apply.LiveObjects): the
			// cache holds no schemas.
			b = b.WatchesMetadata(kind, h, managed)
			continue
		}
		b = b.Watches(kind, h, managed)
	}
	// The strategy Jobs, and the monitoring ServiceAccount whose appearance
	// makes the operator regenerate the strategy.
	b = b.Watches(&batchv1.Job{}, toActive, managed)
	b = b.Watches(&corev1.ServiceAccount{}, toActive, builder.WithPredicates(predicate.NewPredicateFuncs(r.monitorAccounts.matches)))
	// virt-handler's pods: the canary widens once its pod is Ready and fails
	// once it restarts, within rolloutEventWindow, not at the next resync.
	// The preflight's pre-pull pods too: a pull error holds the upgrade at once.
	b = b.Watches(&corev1.Pod{}, coalesce.Handler(rolloutEventWindow, r.activeRequest), builder.WithPredicates(predicate.NewPredicateFuncs(rolloutPod)))
	// The nodes virt-handler marks schedulable size virt-api (apply.ScaleAPI):
	// a node gaining or losing the mark brings the operator back; heartbeats
	// and every other node change cost nothing.
	b = b.Watches(&corev1.Node{}, toActive, builder.WithPredicates(schedulableChanged))
	return b
}

// schedulableChanged passes a node event that changes how many nodes carry
// kubevirt.io/schedulable=true.
var schedulableChanged = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return schedulable(e.Object) },
	DeleteFunc:  func(e event.DeleteEvent) bool { return schedulable(e.Object) },
	UpdateFunc:  func(e event.UpdateEvent) bool { return schedulable(e.ObjectOld) != schedulable(e.ObjectNew) },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

func schedulable(o client.Object) bool { return o.GetLabels()[metadata.SchedulableLabel] == "true" }

// managedOrStrategy passes the operator's objects and its strategy ConfigMaps
// and Jobs: a change to anything else in the operator's namespace (or to an
// unmanaged cluster-scoped object) costs no reconcile.
func managedOrStrategy(o client.Object) bool { return metadata.IsManaged(o) || isStrategyObject(o) }

// rolloutPod passes virt-handler's pods and the preflight's pre-pull pods.
func rolloutPod(o client.Object) bool {
	app := o.GetLabels()[metadata.AppLabel]
	return app == "virt-handler" || app == preflight.PrepullValue
}

// monitorAccounts are the ServiceAccounts (namespace/name) whose appearance
// or removal changes the strategy: the monitoring account in each namespace
// monitoring may be in. Any other ServiceAccount, in any namespace, costs no
// reconcile. Until the first reconcile has set them, every one passes.
type monitorAccounts struct {
	keys atomic.Pointer[map[string]bool]
}

func (m *monitorAccounts) set(namespaces []string, account string) {
	keys := map[string]bool{}
	for _, ns := range namespaces {
		if ns != "" {
			keys[ns+"/"+account] = true
		}
	}
	m.keys.Store(&keys)
}

func (m *monitorAccounts) matches(o client.Object) bool {
	keys := m.keys.Load()
	return keys == nil || (*keys)[o.GetNamespace()+"/"+o.GetName()]
}

// rolloutEventWindow is how long the operator gathers virt-handler pod and
// DaemonSet events before it reconciles on them. At 200 nodes the fast step
// makes dozens of such events a second; reconciled one by one they kept the
// operator's worker busy for the whole step (250 reconciles in 10 s), CPU taken
// on a small control plane from the DaemonSet controller, scheduler and API
// server doing the rollout. Gathered, they cost one reconcile per window. 200 ms
// is far below anything the rollout waits for (a bake of seconds, a crash 2 s
// after Ready), so no decision is noticeably late.
const rolloutEventWindow = 200 * time.Millisecond

// notStatusOnly drops updates of the KubeVirt CR that change only its status.
// The operator writes that status itself: reacting to its own write would run
// a second, identical reconcile for every one it makes, and during a rollout
// (a status write per pod event) that doubles the operator's load while the
// DaemonSet controller is rolling virt-handler out.
var notStatusOnly = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, n := e.ObjectOld, e.ObjectNew
	return o.GetGeneration() != n.GetGeneration() ||
		!equality.Semantic.DeepEqual(o.GetLabels(), n.GetLabels()) ||
		!equality.Semantic.DeepEqual(o.GetAnnotations(), n.GetAnnotations()) ||
		!equality.Semantic.DeepEqual(o.GetFinalizers(), n.GetFinalizers()) ||
		!equality.Semantic.DeepEqual(o.GetDeletionTimestamp(), n.GetDeletionTimestamp())
}}

func isStrategyObject(o client.Object) bool {
	_, isStrategyCM := o.GetLabels()[metadata.InstallStrategyLabel]
	return isStrategyCM || o.GetLabels()[metadata.AppLabel] == dumpjob.AppLabelValue
}

// activeRequest maps any event to the active KubeVirt CR.
func (r *Reconciler) activeRequest(ctx context.Context, _ client.Object) []reconcile.Request {
	all := &v1.KubeVirtList{}
	if err := r.Client.List(ctx, all); err != nil {
		return nil
	}
	active := activecr.Of(all.Items, r.Namespace)
	if active == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: active.Namespace, Name: active.Name}}}
}
