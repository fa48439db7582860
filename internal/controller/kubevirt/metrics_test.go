package kubevirt

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Dashboards and alerts read these names: pinned.
func TestControllerMetrics(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	end := metav1.NewTime(start.Add(42 * time.Second))
	publishMetrics(&v1.KubeVirtStatus{ObservedDeploymentID: "a", TargetDeploymentID: "b",
		HandlerRollout: &v1.HandlerRolloutStatus{Phase: "Canary"}, RolloutHold: &v1.RolloutHoldStatus{Reason: "Paused"},
		History: []v1.DeploymentRecord{{DeploymentID: "b", StartedAt: end}, {DeploymentID: "a", StartedAt: start, FinishedAt: &end}}})
	if got := testutil.ToFloat64(handlerPhase.WithLabelValues("Canary")); got != 1 {
		t.Fatalf("phase Canary = %v", got)
	}
	if got := testutil.ToFloat64(handlerPhase.WithLabelValues("Waiting")); got != 0 {
		t.Fatalf("phase Waiting = %v", got)
	}
	if testutil.ToFloat64(lastDeployment) != 42 || testutil.ToFloat64(deploymentRunning) != 1 || testutil.ToFloat64(rolloutHeld) != 1 {
		t.Fatal("deployment gauges")
	}
	driftReverted.WithLabelValues("Deployment").Add(0)
	names := []string{"kubevirt_virt_operator_handler_rollout_phase", "kubevirt_virt_operator_drift_reverted_total",
		"kubevirt_virt_operator_last_deployment_duration_seconds", "kubevirt_virt_operator_deployment_in_progress",
		"kubevirt_virt_operator_rollout_held"}
	if n, err := testutil.GatherAndCount(metrics.Registry, names...); err != nil || n < len(names) {
		t.Fatalf("%d series of the %d metrics served (%v)", n, len(names), err)
	}
}
