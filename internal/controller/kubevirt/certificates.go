package kubevirt

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// ReasonCertificatesFailed: the certificates could not be read, issued or written.
const ReasonCertificatesFailed = "CertificatesFailed"

// reconcileCertificates keeps every certificate valid on every pass, whatever
// the rollout does: held, paused, outside a window, failing its preflight, its
// strategy Job failing, a customization or a later write failing. The
// certificates come from the target's strategy once it is loaded and prepared,
// else from the observed deployment's; with neither, nothing is deployed and
// nothing is due.
//
// The phase is the only writer of the certificate Secrets and the CA bundle
// ConfigMaps (the object phase leaves them out), and it writes the CA bundle
// into the live webhooks and APIServices when it is not there yet. It writes in
// trust order, so no client meets a certificate its CA bundle does not trust:
// the CA Secrets, the CA bundles, the webhooks' and APIServices' caBundle, then
// the leaf Secrets. An invalid rotation policy is reported and the default one
// is used, rather than letting a certificate expire.
func (r *Reconciler) reconcileCertificates(ctx context.Context, s *scope) error {
	src := certificateSource(s)
	if src == nil {
		return nil
	}
	policy, err := certs.PolicyFrom(s.kv.Spec.CertificateRotateStrategy)
	if err != nil {
		s.fail(problem{Reason: ReasonInvalidConfig, Message: err.Error() + "; the certificates are kept valid with the default rotation policy until it is fixed",
			Warning: ReasonInvalidConfig})
		policy = certs.DefaultPolicy()
	}
	secrets, configMaps, err := apply.LiveCertificates(ctx, r.reader(), src.prepared)
	if err != nil {
		return err
	}
	filled, err := certs.Fill(src.prepared, certs.Inputs{Secrets: secrets, ConfigMaps: configMaps, Policy: policy, Now: s.now, Issuer: r.Issuer})
	if err != nil {
		return err
	}
	s.certs = filled
	if !filled.NextCheck.IsZero() {
		s.requeueAfter(max(filled.NextCheck.Sub(s.now), minRecheck))
	}
	// The same objects as the object phase would build: filled from the
	// source's prepared shells, stamped with its config.
	apply.Desired(&strategy.Strategy{Secrets: filled.Secrets, ConfigMaps: filled.ConfigMaps}, src.cfg)
	live := map[apply.ObjectRef]client.Object{}
	for _, o := range secrets {
		live[apply.RefOf(o)] = o
	}
	for _, o := range configMaps {
		live[apply.RefOf(o)] = o
	}
	cas, leaves := splitCASecrets(filled)
	if err := r.write(ctx, s, apply.Plan(cas, live, s.generations)); err != nil {
		return err
	}
	if err := r.write(ctx, s, apply.Plan(objects(filled.ConfigMaps), live, s.generations)); err != nil {
		return err
	}
	if err := r.injectCABundle(ctx, s, filled.CABundle); err != nil {
		return err
	}
	if err := r.write(ctx, s, apply.Plan(leaves, live, s.generations)); err != nil {
		return err
	}
	if issued := issuedCertificates(filled); issued != "" {
		s.emit(eventNormal, "CertificatesIssued", "Certificates", "Issued "+issued)
	}
	return nil
}

// minRecheck is the earliest a certificate check is repeated.
const minRecheck = time.Second

// certificateSource is the deployment the certificates come from: the
// target's once prepared, else the observed one's; nil when there is neither.
func certificateSource(s *scope) *deployment {
	if s.target != nil && s.target.prepared != nil {
		return s.target
	}
	if s.observed != nil && s.observed.prepared != nil {
		return s.observed
	}
	return nil
}

// injectCABundle writes bundle as the caBundle of every live webhook
// configuration and APIService of the target's and the observed deployment's
// strategies that does not carry it yet. Only that field changes: the rest of
// each object is the object phase's, which may be holding it at an older
// version.
func (r *Reconciler) injectCABundle(ctx context.Context, s *scope, bundle []byte) error {
	var patched []string
	for _, obj := range bundleCarriers(s.target, s.observed) {
		ok, err := r.patchBundle(ctx, obj, bundle)
		if err != nil {
			return err
		}
		if ok {
			patched = append(patched, obj.GetName())
		}
	}
	if len(patched) > 0 {
		s.emit(eventNormal, "CABundleUpdated", "Certificates", "Updated the CA bundle of "+strings.Join(patched, ", "))
	}
	return nil
}

// bundleCarriers are the webhook configurations and APIServices of the
// deployments' prepared strategies, once each, as empty objects to read into.
func bundleCarriers(deployments ...*deployment) []client.Object {
	seen := map[apply.ObjectRef]bool{}
	var out []client.Object
	add := func(o client.Object) {
		if ref := apply.RefOf(o); !seen[ref] {
			seen[ref] = true
			out = append(out, o)
		}
	}
	for _, d := range deployments {
		if d == nil || d.prepared == nil {
			continue
		}
		for _, w := range d.prepared.ValidatingWebhookConfigurations {
			add(&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: w.Name}})
		}
		for _, w := range d.prepared.MutatingWebhookConfigurations {
			add(&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: w.Name}})
		}
		for _, a := range d.prepared.APIServices {
			add(&apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: a.Name}})
		}
	}
	return out
}

// patchBundle reads obj's live copy (a managed one only) and, when a caBundle
// of it differs from bundle, patches them under an optimistic lock. It reports
// whether it patched.
func (r *Reconciler) patchBundle(ctx context.Context, obj client.Object, bundle []byte) (bool, error) {
	if err := r.reader().Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if !metadata.IsManaged(obj) {
		return false, nil
	}
	base := obj.DeepCopyObject().(client.Object)
	changed := false
	for _, field := range caBundleFields(obj) {
		if !bytes.Equal(*field, bundle) {
			*field, changed = bytes.Clone(bundle), true
		}
	}
	if !changed {
		return false, nil
	}
	if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, fmt.Errorf("writing the CA bundle of %s: %w", apply.RefOf(obj), err)
	}
	return true, nil
}

// caBundleFields are the caBundle fields of a webhook configuration or an APIService.
func caBundleFields(obj client.Object) []*[]byte {
	var out []*[]byte
	switch o := obj.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range o.Webhooks {
			out = append(out, &o.Webhooks[i].ClientConfig.CABundle)
		}
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range o.Webhooks {
			out = append(out, &o.Webhooks[i].ClientConfig.CABundle)
		}
	case *apiregistrationv1.APIService:
		out = append(out, &o.Spec.CABundle)
	}
	return out
}

// splitCASecrets separates the filled CA Secrets from the leaves.
func splitCASecrets(filled *certs.Result) (cas, leaves []client.Object) {
	for _, sec := range filled.Secrets {
		if certs.IsCAName(sec.Name) {
			cas = append(cas, sec)
		} else {
			leaves = append(leaves, sec)
		}
	}
	return cas, leaves
}

// issuedCertificates lists the certificates Fill issued, with why; "" when none.
func issuedCertificates(filled *certs.Result) string {
	var parts []string
	for _, d := range filled.Decisions {
		if d.Rotate {
			parts = append(parts, fmt.Sprintf("%s (%s)", d.Secret.Name, d.Reason))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%d certificates: %s", len(parts), strings.Join(parts, ", "))
}

// certificateRefs are the objects the certificate phase owns.
func certificateRefs(filled *certs.Result) map[apply.ObjectRef]bool {
	out := map[apply.ObjectRef]bool{}
	if filled == nil {
		return out
	}
	for _, o := range filled.Secrets {
		out[apply.RefOf(o)] = true
	}
	for _, o := range filled.ConfigMaps {
		out[apply.RefOf(o)] = true
	}
	return out
}

func objects[T client.Object](in []T) []client.Object {
	out := make([]client.Object, 0, len(in))
	for _, o := range in {
		out = append(out, o)
	}
	return out
}
