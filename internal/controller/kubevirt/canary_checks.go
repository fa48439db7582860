package kubevirt

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/rollout"
	"github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// The canary's data-plane checks (rollout's Verifying phase) read every VMI,
// migration and node from the caches (the VMIs and migrations from the
// workload cache the workload updater reads), and create and abort the
// migration probe's migrations. rollout decides all of it; this file only
// reads and writes.
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstancemigrations,verbs=create;delete

// Event reasons of the migration probe's own writes.
const (
	ReasonProbeMigrationCreated = "HandlerProbeMigrationCreated"
	ReasonProbeMigrationAborted = "HandlerProbeMigrationAborted"
)

// dataPlane is what the checks judge: every VMI, migration and node from the
// caches (the workload cache's compact forms, as API objects again), and the
// workload updater's migration caps. Kinds not served yet (no KubeVirt CRDs)
// read as none. The compact forms keep no VMI labels: when a migration probe
// selects VMIs by label, the VMIs it selects are listed by their metadata
// (the API server filters them) and carry their labels.
func (r *Reconciler) dataPlane(ctx context.Context, kv *v1.KubeVirt) (*rollout.DataPlane, error) {
	w := r.workloads()
	compact := w.VMIs()
	vmis := make([]v1.VirtualMachineInstance, len(compact))
	for i, vmi := range compact {
		vmis[i] = vmi.Expand()
	}
	if err := r.probeLabels(ctx, kv, vmis); err != nil {
		return nil, err
	}
	all := w.AllMigrations()
	migrations := make([]v1.VirtualMachineInstanceMigration, len(all))
	for i, m := range all {
		migrations[i] = m.Expand()
	}
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing nodes for the data-plane checks: %w", err)
	}
	return &rollout.DataPlane{VMIs: vmis, Migrations: migrations, Nodes: nodes.Items,
		Limits: workloadupdate.SettingsFrom(kv)}, nil
}

// probeLabels gives the VMIs the migration probe's selector selects their
// labels, listed through the API reader by the selector.
func (r *Reconciler) probeLabels(ctx context.Context, kv *v1.KubeVirt, vmis []v1.VirtualMachineInstance) error {
	hr := kv.Spec.HandlerRollout
	if hr == nil || hr.DataPlaneChecks == nil || hr.DataPlaneChecks.MigrationProbe == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&hr.DataPlaneChecks.MigrationProbe.VMISelector)
	if err != nil {
		return nil //nolint:nilerr // the rollout's own reading of the spec reports it
	}
	selected := &metav1.PartialObjectMetadataList{}
	selected.SetGroupVersionKind(v1.GroupVersion.WithKind("VirtualMachineInstanceList"))
	if err := r.APIReaderOrClient().List(ctx, selected, client.MatchingLabelsSelector{Selector: sel}); err != nil && !meta.IsNoMatchError(err) {
		return fmt.Errorf("listing the VMIs the migration probe selects: %w", err)
	}
	labels := make(map[workloadupdate.Key]map[string]string, len(selected.Items))
	for _, o := range selected.Items {
		labels[workloadupdate.Key{Namespace: o.Namespace, Name: o.Name}] = o.Labels
	}
	for i := range vmis {
		if l, ok := labels[workloadupdate.KeyOf(&vmis[i])]; ok {
			vmis[i].Labels = l
		}
	}
	return nil
}

// actOnChecks carries out what the checks decided: aborts (deletes) the
// probe migrations named, then creates the probe's next migration, with an
// Event for each. A migration already gone was aborted; one that already
// exists was created by an earlier pass (its name is derived from the
// rollout and the move), so a retry never makes a second.
func (r *Reconciler) actOnChecks(ctx context.Context, s *scope, d rollout.Decision) error {
	for _, name := range d.AbortMigrations {
		m := &v1.VirtualMachineInstanceMigration{}
		m.Namespace, m.Name = name.Namespace, name.Name
		err := r.Client.Delete(ctx, m)
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("aborting the migration probe's migration %s: %w", name, err)
		}
		if err == nil {
			s.emit(eventNormal, ReasonProbeMigrationAborted, "HandlerRollout", "aborted the virt-handler migration probe's unfinished migration "+name.String())
		}
	}
	m := d.CreateMigration
	if m == nil {
		return nil
	}
	err := r.Client.Create(ctx, m.DeepCopy())
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case err != nil:
		return fmt.Errorf("creating the migration probe's migration %s/%s: %w", m.Namespace, m.Name, err)
	}
	dir := m.Annotations[rollout.ProbeDirectionAnnotation]
	log.FromContext(ctx).Info("virt-handler migration probe", "migration", m.Namespace+"/"+m.Name, "vmi", m.Spec.VMIName, "direction", dir)
	s.emit(eventNormal, ReasonProbeMigrationCreated, "HandlerRollout", fmt.Sprintf(
		"created live migration %s/%s of VMI %s (%s the canary node) for the virt-handler migration probe", m.Namespace, m.Name, m.Spec.VMIName, dir))
	return nil
}

// Metric names of the data-plane checks (pinned by a test).
const (
	HandlerCheckMetric         = "kubevirt_virt_operator_handler_dataplane_check"
	HandlerCheckDurationMetric = "kubevirt_virt_operator_handler_dataplane_check_duration_seconds"
)

var (
	handlerCheck = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: HandlerCheckMetric,
		Help: "1 for the state each data-plane check of the virt-handler rollout is in (Pending, Running, Holding, Passed, Skipped, Failed, Stopped), 0 for the others; no series for a check not asked for.",
	}, []string{"check", "state"})
	handlerCheckDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: HandlerCheckDurationMetric,
		Help: "How long each data-plane check of the virt-handler rollout took, from its start to its verdict (to the rollout's last progress while it runs).",
	}, []string{"check"})
)

var checkStates = []rollout.CheckState{rollout.CheckPending, rollout.CheckRunning, rollout.CheckHolding, rollout.CheckPassed,
	rollout.CheckSkipped, rollout.CheckFailed, rollout.CheckStopped}

func init() { metrics.Registry.MustRegister(handlerCheck, handlerCheckDuration) }

// publishCheckMetrics sets the checks' gauges from the rollout's status: a
// series per check it lists, none for the others.
func publishCheckMetrics(h *v1.HandlerRolloutStatus) {
	handlerCheck.Reset()
	handlerCheckDuration.Reset()
	if h == nil {
		return
	}
	for _, c := range h.DataPlaneChecks {
		for _, s := range checkStates {
			v := 0.0
			if string(s) == c.State {
				v = 1
			}
			handlerCheck.WithLabelValues(c.Name, string(s)).Set(v)
		}
		end := c.FinishedAt
		if end == nil {
			end = h.LastProgressAt
		}
		if c.StartedAt != nil && end != nil && !end.Before(c.StartedAt) {
			handlerCheckDuration.WithLabelValues(c.Name).Set(end.Sub(c.StartedAt.Time).Seconds())
		}
	}
}
