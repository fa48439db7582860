// Package certificates is the controller that keeps the KubeVirt control
// plane's certificates valid, a loop of its own beside the KubeVirt
// controller, as cert-manager's: it reconciles the CAs, the CA bundles, the
// leaf certificates and the caBundle of the webhooks and APIServices from the
// live cluster and from what the KubeVirt controller wants (package certs
// decides; this package reads and writes).
//
// What it keeps valid is the union of what every deployment involved needs
// (Wants, from the KubeVirt controller: the target's and, while a rollout is
// under way, the observed one's) and every certificate that exists: a
// component that still runs keeps its certificates whatever a held rollout,
// a failing strategy or an invalid spec leaves the KubeVirt controller
// doing. Nothing of the KubeVirt controller's pass can stop it: it has its own
// triggers (the KubeVirt CR, its Secrets and ConfigMaps, the webhooks and
// APIServices, Wants) and its own requeue at the next due date.
//
// It is the only writer of the certificate Secrets, the CA bundle ConfigMaps
// and the caBundle fields (server-side apply as FieldManager), in trust order:
// the CA Secrets, the CA bundles, the caBundle of every webhook and
// APIService, then the leaves, so no client meets a certificate its CA bundle
// does not trust. It never creates a certificate while the KubeVirt CR is
// being deleted, and never writes over one that is being deleted or was
// deleted since it was read (an uninstall's deletions stay deleted); a
// component's certificates are deleted with the component, by the KubeVirt
// controller.
package certificates

import (
	"context"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/activecr"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/controller/transient"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// FieldManager is the server-side apply field manager of the certificate
// controller's writes: its own, so the caBundle fields it owns in the webhooks
// and APIServices are not the KubeVirt controller's, which applies those
// objects without them.
const FieldManager = apply.CertificatesFieldManager

// Reasons of status.certificates and of the Events.
const (
	// ReasonFailed: the certificates could not be read, issued or written.
	ReasonFailed = "CertificatesFailed"
	// ReasonInvalidPolicy: spec.certificateRotateStrategy is invalid; the
	// default policy is used until it is fixed.
	ReasonInvalidPolicy = "InvalidCertificateRotateStrategy"
)

// minRecheck is the earliest a certificate check is repeated.
const minRecheck = time.Second

// Reconciler keeps the certificates valid.
type Reconciler struct {
	Client    client.Client
	Namespace string
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock
	// Issuer issues certificates (its key source can be set in tests).
	Issuer certs.Issuer
	// Wants is what the KubeVirt controller needs certificates for.
	Wants *Wants

	// transient is since when errors have been transient only: such an
	// error is retried quietly for transient.Grace before status says it.
	transient transient.Errors
}

// SetupWithManager registers the controller and its watches.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	toActive := handler.EnqueueRequestsFromMapFunc(r.activeRequest)
	return builder.ControllerManagedBy(mgr).Named("certificates").
		For(&v1.KubeVirt{}, builder.WithPredicates(specOrDeletion)).
		Watches(&corev1.Secret{}, toActive, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return certs.IsCertificateObject("Secret", o.GetName(), o.GetNamespace())
		}))).
		Watches(&corev1.ConfigMap{}, toActive, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return certs.IsBundleName(o.GetName())
		}))).
		Watches(&admissionregistrationv1.ValidatingWebhookConfiguration{}, toActive, builder.WithPredicates(managed)).
		Watches(&admissionregistrationv1.MutatingWebhookConfiguration{}, toActive, builder.WithPredicates(managed)).
		Watches(&apiregistrationv1.APIService{}, toActive, builder.WithPredicates(managed)).
		WatchesRawSource(r.Wants.source()).
		Complete(r)
}

var managed = predicate.NewPredicateFuncs(func(o client.Object) bool { return metadata.IsManaged(o) })

// specOrDeletion passes a KubeVirt CR's creation and deletion and a change of
// its spec (the rotation policy) or deletion timestamp; status writes, the
// most frequent, cost nothing.
var specOrDeletion = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
		!equality.Semantic.DeepEqual(e.ObjectOld.GetDeletionTimestamp(), e.ObjectNew.GetDeletionTimestamp())
}}

// Reconcile keeps every certificate of the active KubeVirt CR valid.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	all := &v1.KubeVirtList{}
	if err := r.Client.List(ctx, all); err != nil {
		return reconcile.Result{}, err
	}
	kv := activecr.Of(all.Items, r.Namespace)
	if kv == nil || kv.Namespace != req.Namespace || kv.Name != req.Name {
		return reconcile.Result{}, nil
	}
	now := r.Clock.Now()
	wanted, version := r.Wants.snapshot(types.NamespacedName{Namespace: kv.Namespace, Name: kv.Name})
	out, err := r.keepValid(ctx, kv, wanted, now)
	reported := err
	switch {
	case err == nil:
		r.transient.Clear()
	case !r.transient.Degrade(err, now):
		log.FromContext(ctx).Info("retrying after a transient error", "error", err.Error())
		reported = nil
		out.keepProblem = true // within the grace: what status says stays as it is
	}
	if statusErr := r.writeStatus(ctx, kv, out, reported, now); statusErr != nil && err == nil {
		err = statusErr
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	r.Wants.markServed(version)
	if out.filled == nil || out.filled.NextCheck.IsZero() {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{RequeueAfter: max(out.filled.NextCheck.Sub(now), minRecheck)}, nil
}

// outcome is what one pass did.
type outcome struct {
	filled *certs.Result
	// policyProblem says why the rotation policy in the spec was not used.
	policyProblem string
	// keepProblem: the pass stopped at a transient error within its grace and
	// concluded nothing about the certificates' problem.
	keepProblem bool
}

// keepValid fills the needed certificates from the live ones and writes what
// changed, in trust order.
func (r *Reconciler) keepValid(ctx context.Context, kv *v1.KubeVirt, wanted Wanted, now time.Time) (outcome, error) {
	var out outcome
	policy, err := certs.PolicyFrom(kv.Spec.CertificateRotateStrategy)
	if err != nil {
		out.policyProblem = err.Error() + "; the certificates are kept valid with the default rotation policy until it is fixed"
		policy = certs.DefaultPolicy()
	}
	secrets := &corev1.SecretList{}
	if err := r.Client.List(ctx, secrets, client.InNamespace(r.Namespace)); err != nil {
		return out, fmt.Errorf("listing Secrets: %w", err)
	}
	configMaps := &corev1.ConfigMapList{}
	if err := r.Client.List(ctx, configMaps, client.InNamespace(r.Namespace)); err != nil {
		return out, fmt.Errorf("listing ConfigMaps: %w", err)
	}
	deleting := kv.DeletionTimestamp != nil
	shells, bundles := certs.Needed(r.Namespace, wanted.Secrets, wanted.ConfigMaps, secrets.Items, configMaps.Items, deleting)
	if len(shells) == 0 {
		return out, nil
	}
	liveSecrets, liveConfigMaps := byKey(secrets.Items), byKey(configMaps.Items)
	filled, err := certs.Fill(&strategy.Strategy{Secrets: shells, ConfigMaps: bundles},
		certs.Inputs{Secrets: liveSecrets, ConfigMaps: liveConfigMaps, Policy: policy, Now: now, Issuer: r.Issuer})
	if err != nil {
		return out, err
	}
	out.filled = filled
	w := &writer{c: r.Client, deleting: deleting}
	cas, leaves := splitCAs(filled.Secrets)
	for _, s := range cas {
		if err := w.write(ctx, s, orNil(liveSecrets[client.ObjectKeyFromObject(s)])); err != nil {
			return out, err
		}
	}
	for _, cm := range filled.ConfigMaps {
		if err := w.write(ctx, cm, orNil(liveConfigMaps[client.ObjectKeyFromObject(cm)])); err != nil {
			return out, err
		}
	}
	injected, err := injectCABundle(ctx, r.Client, filled.CABundle)
	if err != nil {
		return out, err
	}
	for _, s := range leaves {
		if err := w.write(ctx, s, orNil(liveSecrets[client.ObjectKeyFromObject(s)])); err != nil {
			return out, err
		}
	}
	r.announce(ctx, kv, filled, injected)
	return out, nil
}

// announce sends the Events of what a pass issued and injected.
func (r *Reconciler) announce(ctx context.Context, kv *v1.KubeVirt, filled *certs.Result, injected []string) {
	var issued []string
	for _, d := range filled.Decisions {
		if d.Rotate {
			issued = append(issued, fmt.Sprintf("%s (%s)", d.Secret.Name, d.Reason))
		}
	}
	if len(issued) > 0 {
		log.FromContext(ctx).Info("certificates issued", "certificates", issued)
		r.event(kv, corev1.EventTypeNormal, "CertificatesIssued", fmt.Sprintf("Issued %d certificates: %s", len(issued), strings.Join(issued, ", ")))
	}
	if len(injected) > 0 {
		r.event(kv, corev1.EventTypeNormal, "CABundleUpdated", "Updated the CA bundle of "+strings.Join(injected, ", "))
	}
}

func (r *Reconciler) event(kv *v1.KubeVirt, typ, reason, message string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(kv, nil, typ, reason, "Certificates", "%s", message)
	}
}

// writeStatus records where the certificates stand in status.certificates,
// with a merge patch of that field alone, when it changed; a failure to keep
// them valid sends a Warning when it first appears.
func (r *Reconciler) writeStatus(ctx context.Context, kv *v1.KubeVirt, out outcome, failed error, now time.Time) error {
	next := kv.Status.Certificates.DeepCopy()
	if next == nil {
		next = &v1.CertificatesStatus{}
	}
	switch {
	case out.keepProblem:
	case failed != nil:
		next.Reason, next.Message = ReasonFailed, "Keeping the certificates valid failed and is retried: "+failed.Error()
	case out.policyProblem != "":
		next.Reason, next.Message = ReasonInvalidPolicy, out.policyProblem
	default:
		next.Reason, next.Message = "", ""
	}
	if out.filled != nil && !out.filled.NextCheck.IsZero() {
		next.NextCheck = &metav1.Time{Time: out.filled.NextCheck.UTC().Truncate(time.Second)}
	}
	if equality.Semantic.DeepEqual(kv.Status.Certificates, next) {
		return nil
	}
	if next.Reason != "" && (kv.Status.Certificates == nil || kv.Status.Certificates.Message != next.Message) {
		r.event(kv, corev1.EventTypeWarning, next.Reason, next.Message)
	}
	patch, err := statusPatch(next)
	if err != nil {
		return err
	}
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, kv.DeepCopy(), client.RawPatch(types.MergePatchType, patch)))
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

func byKey[T any, PT interface {
	*T
	client.Object
}](items []T) map[types.NamespacedName]PT {
	out := make(map[types.NamespacedName]PT, len(items))
	for i := range items {
		o := PT(&items[i])
		out[client.ObjectKeyFromObject(o)] = o
	}
	return out
}

// orNil is o, or a nil interface (not a typed nil) when o is nil.
func orNil[T any, PT interface {
	*T
	client.Object
}](o PT) client.Object {
	if o == nil {
		return nil
	}
	return o
}

// splitCAs separates the CA Secrets from the leaves, keeping their order.
func splitCAs(secrets []*corev1.Secret) (cas, leaves []*corev1.Secret) {
	for _, s := range secrets {
		if certs.IsCAName(s.Name) {
			cas = append(cas, s)
		} else {
			leaves = append(leaves, s)
		}
	}
	return cas, leaves
}
