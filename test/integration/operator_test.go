package integration

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/operator"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
)

// With leader election on, the operator takes the lease and marks a new
// KubeVirt CR in its namespace Deploying; a CR elsewhere only gets a condition
// saying it is ignored.
func TestOperatorMarksNewKubeVirtDeploying(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := createNamespace(t, ctx, "operator")
	other := createNamespace(t, ctx, "elsewhere")

	metricsAddr, healthAddr := sandboxtest.FreeAddr(t), sandboxtest.FreeAddr(t)
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, restConfig, operator.Options{
			Namespace: ns, MetricsAddr: metricsAddr, HealthAddr: healthAddr, LeaderElection: true,
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator exited with %v", err)
		}
	})

	mine := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: ns}}
	foreign := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: other}}
	for _, kv := range []*v1.KubeVirt{mine, foreign} {
		if err := k8s.Create(ctx, kv); err != nil {
			t.Fatal(err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(mine), mine); err != nil {
			return false, err
		}
		return mine.Status.Phase == v1.KubeVirtPhaseDeploying, nil
	})
	if err != nil {
		t.Fatalf("phase is %q, want Deploying: %v", mine.Status.Phase, err)
	}
	lease := &coordinationv1.Lease{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: operator.DefaultLeaderElectionID}, lease); err != nil {
		t.Fatalf("leader election lease: %v", err)
	}
	for _, url := range []string{"http://" + healthAddr + "/healthz", "http://" + healthAddr + "/readyz"} {
		if body := httpGet(t, url); !strings.Contains(body, "ok") {
			t.Errorf("GET %s answered %q", url, body)
		}
	}
	checkMetricsAccess(t, ctx, ns, metricsAddr)
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(foreign), foreign); err != nil {
		t.Fatal(err)
	}
	if foreign.Status.Phase != "" {
		t.Fatalf("a KubeVirt outside the operator's namespace was acted on: phase %q", foreign.Status.Phase)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(foreign), foreign); err != nil {
			return false, err
		}
		for _, c := range foreign.Status.Conditions {
			if c.Type == v1.KubeVirtConditionSynchronized && c.Status == "False" && strings.Contains(c.Message, "ignored") {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the ignored KubeVirt has no condition saying so: %+v", foreign.Status.Conditions)
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(body)
}
