package apply

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// leavesOutWebhooks: desired is a webhook configuration without a webhook
// live has (a rollback to a release with one fewer). Server-side apply
// keeps a list entry while another manager owns a field of it, and the
// certificate controller owns every webhook's caBundle: the apply would leave
// a webhook of a name and a caBundle, which the API server refuses. Such a
// write is a replacement (replaceWebhooks).
func leavesOutWebhooks(desired, live client.Object) bool {
	if live == nil || !isWebhookConfiguration(desired) {
		return false
	}
	m, err := contentOf(live)
	if err != nil {
		return false
	}
	want := map[string]bool{}
	for _, name := range webhookNamesOf(desired) {
		want[name] = true
	}
	for _, wh := range webhooksOf(m) {
		if name, _ := wh["name"].(string); !want[name] {
			return true
		}
	}
	return false
}

func isWebhookConfiguration(obj client.Object) bool {
	k := kindOf(obj)
	return k == "ValidatingWebhookConfiguration" || k == "MutatingWebhookConfiguration"
}

func webhookNamesOf(obj client.Object) []string {
	m, err := contentOf(obj)
	if err != nil {
		return nil
	}
	var names []string
	for _, wh := range webhooksOf(m) {
		if name, ok := wh["name"].(string); ok {
			names = append(names, name)
		}
	}
	return names
}

func webhooksOf(m map[string]any) []map[string]any {
	list, _ := m["webhooks"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, item := range list {
		if wh, ok := item.(map[string]any); ok {
			out = append(out, wh)
		}
	}
	return out
}

// replaceWebhooks writes u's webhooks, a webhook configuration's, in place of
// live's, each webhook it keeps carrying the caBundle live has (no webhook
// goes without its bundle until the certificate controller's next pass, and
// the bundle stays that controller's field: its value does not change), with
// u's labels and annotations. A JSON merge patch replaces a list whole, where
// an apply merges it; it is the verb the operator has (patch, not update),
// and it is conditional on live's resourceVersion, so a bundle rotated since
// live was read is a conflict, retried, never overwritten.
func (ap *Applier) replaceWebhooks(ctx context.Context, u *unstructured.Unstructured, live client.Object) (client.Object, error) {
	m, err := contentOf(live)
	if err != nil {
		return nil, err
	}
	bundles := map[string]any{}
	for _, wh := range webhooksOf(m) {
		if b, ok, _ := unstructured.NestedFieldNoCopy(wh, "clientConfig", "caBundle"); ok {
			bundles[fmt.Sprint(wh["name"])] = b
		}
	}
	webhooks := []any{}
	for _, wh := range webhooksOf(u.Object) {
		name := fmt.Sprint(wh["name"])
		if _, set, _ := unstructured.NestedFieldNoCopy(wh, "clientConfig", "caBundle"); !set && bundles[name] != nil {
			if err := unstructured.SetNestedField(wh, bundles[name], "clientConfig", "caBundle"); err != nil {
				return nil, err
			}
		}
		webhooks = append(webhooks, wh)
	}
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": live.GetResourceVersion(), "labels": u.GetLabels(), "annotations": u.GetAnnotations()},
		"webhooks": webhooks,
	})
	if err != nil {
		return nil, err
	}
	target := &unstructured.Unstructured{}
	target.SetGroupVersionKind(u.GroupVersionKind())
	target.SetName(u.GetName())
	if err := ap.Client.Patch(ctx, target, client.RawPatch(types.MergePatchType, body), client.FieldOwner(FieldManager)); err != nil {
		return nil, err
	}
	return target, nil
}
