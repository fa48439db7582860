package workloadupdate

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// The metric names are an interface (dashboards, alerts): pinned here.
func TestMetricsAreServed(t *testing.T) {
	setMetrics(core.Plan{Outdated: 7, ActiveMigrations: 2, BackingOff: 1, NeedsAttention: make([]core.Attention, 3)}, 1)
	if got := testutil.ToFloat64(outdated); got != 7 {
		t.Fatalf("%s = %v, want 7", OutdatedMetric, got)
	}
	if got := testutil.ToFloat64(inFlight); got != 3 {
		t.Fatalf("%s = %v, want 3", InFlightMetric, got)
	}
	if got := testutil.ToFloat64(needsAttention); got != 3 {
		t.Fatalf("%s = %v, want 3", NeedsAttentionMetric, got)
	}
	names := []string{"kubevirt_workload_update_outdated_vmis", "kubevirt_workload_update_migrations_in_flight",
		"kubevirt_workload_update_migrations_created_total", "kubevirt_workload_update_evictions_total",
		"kubevirt_workload_update_vmis_needing_attention", "kubevirt_workload_update_vmis_backing_off",
		"kubevirt_workload_update_plans_total"}
	n, err := testutil.GatherAndCount(metrics.Registry, names...)
	if err != nil || n != len(names) {
		t.Fatalf("the operator's registry serves %d of the %d workload-update metrics (%v)", n, len(names), err)
	}
	if n, _ := testutil.GatherAndCount(metrics.Registry, "kubevirt_vmi_number_of_outdated"); n != 0 {
		t.Fatal("kubevirt_vmi_number_of_outdated is virt-controller's; the operator must not export it too")
	}
}
