package kubevirt

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// The install namespace is labelled for OpenShift's platform monitoring, as
// upstream's operator labels it: the request for namespaces/NAME is authorized
// in namespace NAME, so a Role there grants it on that namespace alone.
// +kubebuilder:rbac:groups="",namespace=kubevirt,resources=namespaces,verbs=get;patch

// labelNamespace sets metadata.ClusterMonitoringLabel=true (OpenShift's
// platform Prometheus loads a namespace's PrometheusRules, KubeVirt's alerts,
// by it; upstream's operator sets it on any cluster, where it means nothing) on the install namespace
// where it is not, with a merge patch of that label alone: the namespace is
// never a managed object (the operator neither owns nor deletes it). It runs
// when a rollout's first step writes (an install, an upgrade, a repair), so a
// cluster at rest costs no request. A refusal (a role from before the rule)
// is a Warning Event, not a failed rollout: the label serves OpenShift's
// alerts, not KubeVirt itself.
func (r *Reconciler) labelNamespace(ctx context.Context, s *scope) {
	ns := &corev1.Namespace{}
	err := r.APIReaderOrClient().Get(ctx, client.ObjectKey{Name: s.kv.Namespace}, ns)
	if err == nil && ns.Labels[metadata.ClusterMonitoringLabel] != "true" {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+metadata.ClusterMonitoringLabel+`":"true"}}}`))
		err = r.Client.Patch(ctx, ns, patch)
	}
	if client.IgnoreNotFound(err) != nil {
		s.emit(eventWarning, "NamespaceNotLabelled", "Rollout",
			fmt.Sprintf("namespace %s not labelled %s=true (OpenShift's platform monitoring loads KubeVirt's alerts by it): %v", s.kv.Namespace, metadata.ClusterMonitoringLabel, err))
	}
}
