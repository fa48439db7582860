package workloadupdate

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// Metric names. kubevirt_vmi_number_of_outdated is virt-controller's, which
// exports it whatever the actor, so this operator exports its own count.
const (
	OutdatedMetric       = "kubevirt_workload_update_outdated_vmis"
	InFlightMetric       = "kubevirt_workload_update_migrations_in_flight"
	CreatedMetric        = "kubevirt_workload_update_migrations_created_total"
	EvictionsMetric      = "kubevirt_workload_update_evictions_total"
	NeedsAttentionMetric = "kubevirt_workload_update_vmis_needing_attention"
	BackingOffMetric     = "kubevirt_workload_update_vmis_backing_off"
	PlansMetric          = "kubevirt_workload_update_plans_total"
)

var (
	outdated = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: OutdatedMetric,
		Help: "VMIs running an outdated virt-launcher (or with a pending change that needs a migration), as virt-operator counts them.",
	})
	inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: InFlightMetric,
		Help: "Migrations holding a cluster migration slot, as the workload updater counts them.",
	})
	migrationsCreated = prometheus.NewCounter(prometheus.CounterOpts{
		Name: CreatedMetric,
		Help: "Migrations the workload updater created.",
	})
	evictions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: EvictionsMetric,
		Help: "Launcher pods the workload updater evicted.",
	})
	needsAttention = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: NeedsAttentionMetric,
		Help: "VMIs whose workload-update migrations failed maxFailures times.",
	})
	backingOff = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: BackingOffMetric,
		Help: "VMIs waiting out the backoff after a failed workload-update migration.",
	})
	plansTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: PlansMetric,
		Help: "Plans the workload updater made (each lists the VMIs and migrations from the cache).",
	})
)

func init() {
	metrics.Registry.MustRegister(outdated, inFlight, migrationsCreated, evictions, needsAttention, backingOff, plansTotal)
}

// setMetrics publishes a plan's gauges; created is how many of its migrations
// were created.
func setMetrics(p core.Plan, created int) {
	outdated.Set(float64(p.Outdated))
	inFlight.Set(float64(p.ActiveMigrations + created))
	needsAttention.Set(float64(len(p.NeedsAttention)))
	backingOff.Set(float64(p.BackingOff))
}
