package integration

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/operator"
)

// The operator skeleton: with leader election on, it takes the lease and marks
// a new KubeVirt CR in its namespace Deploying, and ignores one elsewhere.
func TestOperatorMarksNewKubeVirtDeploying(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := createNamespace(t, ctx, "operator")
	other := createNamespace(t, ctx, "elsewhere")

	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, restConfig, operator.Options{
			Namespace: ns, MetricsAddr: "0", HealthAddr: "0", LeaderElection: true,
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
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
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
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(foreign), foreign); err != nil {
		t.Fatal(err)
	}
	if foreign.Status.Phase != "" {
		t.Fatalf("a KubeVirt outside the operator's namespace was touched: phase %q", foreign.Status.Phase)
	}
}
