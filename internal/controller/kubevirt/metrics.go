package kubevirt

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/history"
	"github.com/virt-operator/virt-operator/internal/rollout"
)

// Metric names of the KubeVirt controller (pinned by a test).
const (
	HandlerRolloutPhaseMetric = "kubevirt_virt_operator_handler_rollout_phase"
	DriftRevertedMetric       = "kubevirt_virt_operator_drift_reverted_total"
	LastDeploymentMetric      = "kubevirt_virt_operator_last_deployment_duration_seconds"
	DeploymentRunningMetric   = "kubevirt_virt_operator_deployment_in_progress"
	RolloutHeldMetric         = "kubevirt_virt_operator_rollout_held"
)

var (
	handlerPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: HandlerRolloutPhaseMetric,
		Help: "1 for the virt-handler rollout's current phase, 0 for the others.",
	}, []string{"phase"})
	driftReverted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: DriftRevertedMetric,
		Help: "Objects the operator wrote at rest (observed == target), by kind: drift reverted, or a certificate rotated.",
	}, []string{"kind"})
	lastDeployment = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: LastDeploymentMetric,
		Help: "How long the newest finished deployment (install or upgrade) took, from status.history.",
	})
	deploymentRunning = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: DeploymentRunningMetric,
		Help: "1 while an install or upgrade is in progress.",
	})
	rolloutHeld = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: RolloutHeldMetric,
		Help: "1 while an install or upgrade is held (spec.paused, outside spec.rolloutWindows).",
	})
)

var rolloutPhases = []rollout.Phase{rollout.PhaseStarted, rollout.PhaseCanary, rollout.PhaseVerifying, rollout.PhaseIncreasing,
	rollout.PhaseWaiting, rollout.PhaseSuccessful, rollout.PhaseFailed}

func init() {
	metrics.Registry.MustRegister(handlerPhase, driftReverted, lastDeployment, deploymentRunning, rolloutHeld)
}

// publishMetrics sets the gauges from the status one pass concluded.
func publishMetrics(st *v1.KubeVirtStatus) {
	current := ""
	if st.HandlerRollout != nil {
		current = st.HandlerRollout.Phase
	}
	for _, p := range rolloutPhases {
		v := 0.0
		if string(p) == current {
			v = 1
		}
		handlerPhase.WithLabelValues(string(p)).Set(v)
	}
	running, held := 0.0, 0.0
	if st.ObservedDeploymentID != st.TargetDeploymentID {
		running = 1
	}
	if st.RolloutHold != nil {
		held = 1
	}
	deploymentRunning.Set(running)
	rolloutHeld.Set(held)
	publishCheckMetrics(st.HandlerRollout)
	for _, r := range st.History {
		if r.FinishedAt != nil {
			lastDeployment.Set(history.Duration(r).Seconds())
			break
		}
	}
}

// countDrift counts the writes of a pass at rest: each reverts a drifted
// object or rotates a certificate.
func countDrift(s *scope, writes []apply.Action) {
	observed := s.kv.Status.ObservedDeploymentID
	if observed == "" || s.cfg == nil || observed != s.cfg.ID {
		return
	}
	for _, w := range writes {
		driftReverted.WithLabelValues(apply.RefOf(w.Object).Kind).Inc()
	}
}
