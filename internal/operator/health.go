package operator

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Upstream's operator metrics, which its PrometheusRule (shipped in every
// strategy) records as cluster:kubevirt_virt_operator_leading:sum and
// cluster:kubevirt_virt_operator_ready:sum and alerts on (NoLeadingVirtOperator,
// NoReadyVirtOperator, LowReadyVirtOperatorsCount): without them those alerts
// fire on a healthy cluster.
const (
	LeadingMetric = "kubevirt_virt_operator_leading_status"
	ReadyMetric   = "kubevirt_virt_operator_ready_status"
)

var (
	leadingStatus = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: LeadingMetric,
		Help: "Indication for an operating virt-operator: 1 while this replica leads.",
	})
	readyStatus = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: ReadyMetric,
		Help: "Indication for a virt-operator that is ready to take the lead: 1 once its caches are synced.",
	})
)

func init() {
	metrics.Registry.MustRegister(leadingStatus, readyStatus)
}

// leading is a leader-election runnable: it runs only while this replica leads.
type leading struct{}

func (leading) NeedLeaderElection() bool { return true }

func (leading) Start(ctx context.Context) error {
	leadingStatus.Set(1)
	<-ctx.Done()
	leadingStatus.Set(0)
	return nil
}

// readiness follows the cache: every replica syncs it, leader or not.
type readiness struct {
	cache cache.Cache
	ready atomic.Bool
}

func (r *readiness) NeedLeaderElection() bool { return false }

func (r *readiness) Start(ctx context.Context) error {
	if r.cache.WaitForCacheSync(ctx) {
		r.ready.Store(true)
		readyStatus.Set(1)
	}
	<-ctx.Done()
	r.ready.Store(false)
	readyStatus.Set(0)
	return nil
}

// check is the /readyz check: ready once the caches are synced.
func (r *readiness) check(*http.Request) error {
	if !r.ready.Load() {
		return errors.New("caches not synced yet")
	}
	return nil
}
