package workloadupdate

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

func TestMetricsAreServed(t *testing.T) {
	setMetrics(7, 3)
	if got := testutil.ToFloat64(outdated); got != 7 {
		t.Fatalf("kubevirt_vmi_number_of_outdated = %v, want 7", got)
	}
	n, err := testutil.GatherAndCount(metrics.Registry, "kubevirt_vmi_number_of_outdated",
		"kubevirt_workload_update_migrations_in_flight", "kubevirt_workload_update_migrations_created_total",
		"kubevirt_workload_update_evictions_total")
	if err != nil || n != 4 {
		t.Fatalf("the operator's registry serves %d of the 4 workload-update metrics (%v)", n, err)
	}
}
