package strategy

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DetectMonitorNamespace returns the first candidate namespace that holds the
// ServiceAccount account (Prometheus'), or "" when none does: then the strategy
// has no monitoring objects, which is not an error (upstream §3.5). Upstream
// looks the namespace up first; an account can only be in a namespace that
// exists, so the answer is the same with one read less, and the operator needs
// no Namespace reads (nor a cache of every Namespace). NotFound moves on to the
// next candidate; any other error (Forbidden, a timeout) aborts, because
// guessing "no monitoring" would bake a wrong answer into the strategy. Empty
// candidates are skipped.
//
// The operator calls this on every reconcile and compares the answer with the
// cached strategy's (Fresh), which is how monitoring that appears later heals.
func DetectMonitorNamespace(ctx context.Context, r client.Reader, candidates []string, account string) (string, error) {
	if account == "" {
		return "", fmt.Errorf("detecting the monitoring namespace: no monitoring ServiceAccount name")
	}
	for _, ns := range candidates {
		if ns == "" {
			continue
		}
		found, err := exists(ctx, r, client.ObjectKey{Namespace: ns, Name: account}, &corev1.ServiceAccount{})
		if err != nil {
			return "", fmt.Errorf("detecting the monitoring namespace: serviceaccount %s/%s: %w", ns, account, err)
		}
		if found {
			return ns, nil
		}
	}
	return "", nil
}

// exists GETs key into obj; NotFound is (false, nil).
func exists(ctx context.Context, r client.Reader, key client.ObjectKey, obj client.Object) (bool, error) {
	err := r.Get(ctx, key, obj)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, err
	}
}

// MonitoringRoleBinding binds Prometheus' ServiceAccount in every strategy generated
// with a monitoring namespace (upstream's name).
const MonitoringRoleBinding = "kubevirt-monitoring"

// MonitorNamespaceOf reads from a strategy's content which monitoring namespace it
// was generated with: the namespace of the ServiceAccount its monitoring
// RoleBinding binds, "" when it has none. It is how the operator learns the answer
// of a strategy that a release's own operator dumped (without our
// MonitorNamespaceAnnotation).
func MonitorNamespaceOf(s *Strategy) string {
	for _, rb := range s.RoleBindings {
		if rb.Name != MonitoringRoleBinding {
			continue
		}
		for _, sub := range rb.Subjects {
			if sub.Kind == "ServiceAccount" && sub.Namespace != "" {
				return sub.Namespace
			}
		}
	}
	return ""
}
