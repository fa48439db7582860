package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/config/rbac"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
)

// checkMetricsAccess: the operator's /metrics answers only over TLS, 401 without
// a token, 403 to an account not granted the metrics reader role, and the
// metrics to one that is (config/rbac's virt-operator-metrics-reader, bound as
// config/prometheus binds it to Prometheus' account).
func checkMetricsAccess(t *testing.T, ctx context.Context, ns, addr string) {
	t.Helper()
	objs, err := rbac.Objects()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" && o.GetName() == rbac.MetricsReaderClusterRole {
			if err := k8s.Create(ctx, o); client.IgnoreAlreadyExists(err) != nil {
				t.Fatal(err)
			}
		}
	}
	scraper := serviceAccountToken(t, ctx, ns, "prometheus")
	stranger := serviceAccountToken(t, ctx, ns, "stranger")
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: rbac.MetricsReaderClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: ns}},
	}
	if err := k8s.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), binding) })

	url := "https://" + addr + "/metrics"
	// The metrics server starts beside the health probes, not before them: a
	// loaded machine has answered /healthz with nothing listening here yet.
	var answer string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		var code int
		code, answer = sandboxtest.Scrape(url, "")
		return code != 0, nil
	})
	if err != nil {
		t.Fatalf("the metrics endpoint never answered: %s", answer)
	}
	if code, _ := sandboxtest.Scrape("http://"+addr+"/metrics", ""); code == http.StatusOK {
		t.Error("/metrics answered plain HTTP")
	}
	if code, body := sandboxtest.Scrape(url, ""); code != http.StatusUnauthorized {
		t.Errorf("without a token: %d, want 401: %.200s", code, body)
	}
	if code, body := sandboxtest.Scrape(url, stranger); code != http.StatusForbidden {
		t.Errorf("an account without the reader role: %d, want 403: %.200s", code, body)
	}
	// The authorizer caches nothing negative for long, but the binding may take
	// a moment to reach the API server's RBAC cache.
	var body string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		var code int
		code, body = sandboxtest.Scrape(url, scraper)
		return code == http.StatusOK, nil
	})
	if err != nil || !strings.Contains(body, "controller_runtime_reconcile_total") {
		t.Fatalf("the metrics reader got no metrics (%v): %.200s", err, body)
	}
}

func serviceAccountToken(t *testing.T, ctx context.Context, ns, name string) string {
	t.Helper()
	if err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
		t.Fatal(err)
	}
	return sandboxtest.Token(t, k8s, ns, name)
}
