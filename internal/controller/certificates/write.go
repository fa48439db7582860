package certificates

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

// The controller writes certificate Secrets and CA bundles, and the caBundle
// of the webhooks and APIServices.
// +kubebuilder:rbac:groups="",namespace=kubevirt,resources=secrets;configmaps,verbs=create;update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,verbs=patch
// +kubebuilder:rbac:groups=apiregistration.k8s.io,resources=apiservices,verbs=patch

// writer writes certificate objects that changed.
type writer struct {
	c client.Client
	// deleting: the install is being uninstalled; nothing is created.
	deleting bool
}

// write writes desired when it differs from live (by the content hash the
// apply engine stamps): a missing one is created, unless the install is being
// deleted; an existing one is updated only as the version read (its
// resourceVersion is the precondition), so one deleted since is never brought
// back and one changed since is read again first.
func (w *writer) write(ctx context.Context, desired, live client.Object) error {
	a := apply.Plan([]client.Object{desired}, map[apply.ObjectRef]client.Object{apply.RefOf(desired): live}, nil)[0]
	switch {
	case a.Op == apply.OpNone:
		return nil
	case live == nil && w.deleting:
		return nil
	case live != nil && live.GetDeletionTimestamp() != nil:
		return nil
	}
	obj := a.Object
	var err error
	if live == nil {
		err = w.c.Create(ctx, obj, client.FieldOwner(FieldManager))
	} else {
		obj.SetResourceVersion(live.GetResourceVersion())
		err = w.c.Update(ctx, obj, client.FieldOwner(FieldManager))
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", apply.RefOf(obj), err)
	}
	return nil
}

// injectCABundle writes bundle as the caBundle of every managed webhook
// configuration and APIService served by a Service (the KubeVirt
// controller writes them without it), when one of its caBundles differs, or
// when this controller does not own it yet (so that the KubeVirt
// controller's next write, which leaves it out, cannot remove it). It names
// the objects it wrote.
func injectCABundle(ctx context.Context, c client.Client, bundle []byte) ([]string, error) {
	if len(bundle) == 0 {
		return nil, nil
	}
	var out []string
	validating := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	mutating := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	apiServices := &apiregistrationv1.APIServiceList{}
	for _, list := range []client.ObjectList{validating, mutating, apiServices} {
		if err := c.List(ctx, list, client.MatchingLabels(managedLabels)); err != nil {
			return nil, err
		}
	}
	for i := range validating.Items {
		o := &validating.Items[i]
		served := make([]servedWebhook, len(o.Webhooks))
		for j, wh := range o.Webhooks {
			served[j] = servedWebhook{wh.Name, wh.ClientConfig}
		}
		if err := injectWebhooks(ctx, c, o, "ValidatingWebhookConfiguration", toInject(o, served, bundle), bundle, &out); err != nil {
			return nil, err
		}
	}
	for i := range mutating.Items {
		o := &mutating.Items[i]
		served := make([]servedWebhook, len(o.Webhooks))
		for j, wh := range o.Webhooks {
			served[j] = servedWebhook{wh.Name, wh.ClientConfig}
		}
		if err := injectWebhooks(ctx, c, o, "MutatingWebhookConfiguration", toInject(o, served, bundle), bundle, &out); err != nil {
			return nil, err
		}
	}
	for i := range apiServices.Items {
		o := &apiServices.Items[i]
		if o.Spec.Service == nil || (slices.Equal(o.Spec.CABundle, bundle) && ownedByUs(o)) || o.DeletionTimestamp != nil {
			continue
		}
		u := partial(o, "apiregistration.k8s.io/v1", "APIService")
		u.Object["spec"] = map[string]any{"caBundle": bundle}
		if err := applyPartial(ctx, c, u, o.ResourceVersion); err != nil {
			return nil, err
		}
		out = append(out, o.Name)
	}
	return out, nil
}

type servedWebhook struct {
	name   string
	config admissionregistrationv1.WebhookClientConfig
}

// toInject names the webhooks of a configuration the bundle is applied to:
// none while every webhook served by a Service carries it and this
// controller owns them, else all of those. All, never the ones that lack it:
// server-side apply removes a field its manager applied before and leaves
// out now, so applying only a webhook the configuration gained (an upgrade
// adds some) would clear every other one's bundle, and the next pass would
// apply those and clear the new one's, for ever.
func toInject(o client.Object, webhooks []servedWebhook, bundle []byte) []string {
	var names []string
	needed := !ownedByUs(o)
	for _, wh := range webhooks {
		if wh.config.Service == nil {
			continue
		}
		names = append(names, wh.name)
		needed = needed || !slices.Equal(wh.config.CABundle, bundle)
	}
	if !needed {
		return nil
	}
	return names
}

// injectWebhooks writes bundle into the named webhooks of a configuration.
func injectWebhooks(ctx context.Context, c client.Client, o client.Object, kind string, names []string, bundle []byte, out *[]string) error {
	if len(names) == 0 || o.GetDeletionTimestamp() != nil {
		return nil
	}
	u := partial(o, "admissionregistration.k8s.io/v1", kind)
	var webhooks []any
	for _, n := range names {
		webhooks = append(webhooks, map[string]any{"name": n, "clientConfig": map[string]any{"caBundle": bundle}})
	}
	u.Object["webhooks"] = webhooks
	if err := applyPartial(ctx, c, u, o.GetResourceVersion()); err != nil {
		return err
	}
	*out = append(*out, o.GetName())
	return nil
}

var managedLabels = map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}

// partial is an apply configuration naming o, to which a caller adds the
// fields it writes.
func partial(o client.Object, apiVersion, kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(o.GetName())
	return u
}

func applyPartial(ctx context.Context, c client.Client, u *unstructured.Unstructured, resourceVersion string) error {
	// A byte slice marshals as base64, as the API's []byte fields do.
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	obj := map[string]any{}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return err
	}
	u.Object = obj
	u.SetResourceVersion(resourceVersion)
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("writing the CA bundle of %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// ownedByUs: this controller has written the object (it owns its caBundle).
// An object without managed fields (a client that tracks none) has nothing
// to take over.
func ownedByUs(o client.Object) bool {
	if len(o.GetManagedFields()) == 0 {
		return true
	}
	for _, f := range o.GetManagedFields() {
		if f.Manager == FieldManager {
			return true
		}
	}
	return false
}

// statusPatch is the merge patch that sets status.certificates to st, with
// an empty reason and message removed rather than left as they were.
func statusPatch(st *v1.CertificatesStatus) ([]byte, error) {
	certificates := map[string]any{"reason": nil, "message": nil}
	if st.NextCheck != nil {
		certificates["nextCheck"] = st.NextCheck
	}
	if st.Reason != "" {
		certificates["reason"], certificates["message"] = st.Reason, st.Message
	}
	return json.Marshal(map[string]any{"status": map[string]any{"certificates": certificates}})
}
