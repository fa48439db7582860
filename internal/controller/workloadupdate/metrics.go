package workloadupdate

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

var (
	outdated = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: core.OutdatedMetricName,
		Help: "Number of VMIs running an outdated virt-launcher (or with a pending change that needs a migration).",
	})
	inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "kubevirt_workload_update_migrations_in_flight",
		Help: "Migrations holding a cluster migration slot, as the workload updater counts them.",
	})
	migrationsCreated = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubevirt_workload_update_migrations_created_total",
		Help: "Migrations the workload updater created.",
	})
	evictions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "kubevirt_workload_update_evictions_total",
		Help: "Launcher pods the workload updater evicted.",
	})
)

func init() {
	metrics.Registry.MustRegister(outdated, inFlight, migrationsCreated, evictions)
}

func setMetrics(outdatedVMIs, migrationsInFlight int) {
	outdated.Set(float64(outdatedVMIs))
	inFlight.Set(float64(migrationsInFlight))
}
