package kubevirt

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// applyOutcome is how far one pass got.
type applyOutcome struct {
	// Created: every prerequisite object exists.
	Created bool
	// RolledOver: every step is ready on the target.
	RolledOver bool
	// RecheckAfter: when a certificate is next due.
	RecheckAfter time.Duration
	// Desired is the strategy as written, for the orphan cleanup.
	Desired *strategy.Strategy
	// ProblemReason and ProblemMessage explain a rollout that cannot progress
	// (a failed or stuck virt-handler canary): Degraded says so.
	ProblemReason, ProblemMessage string
}

// writeWorkers bounds the writes of one kind in flight at once: enough to
// hide the API server's latency on an upgrade's ~80 prerequisite writes, few
// enough not to crowd out everyone else's requests.
const writeWorkers = 8

// applyStrategy writes the target's objects step by step (prerequisites, then
// the components in the path's order) and stops at the first step that has not
// rolled over; the watches on Deployments and DaemonSets bring it back.
func (r *Reconciler) applyStrategy(ctx context.Context, kv *v1.KubeVirt, cfg *deployid.Config, s *strategy.Strategy) (applyOutcome, error) {
	var out applyOutcome
	desired, recheck, err := r.desiredStrategy(ctx, kv, cfg, s)
	if err != nil {
		return out, err
	}
	out.RecheckAfter, out.Desired = recheck, desired
	reader := r.reader()
	live, err := apply.LiveObjects(ctx, reader, desired)
	if err != nil {
		return out, err
	}
	target := metadata.TargetFromStatus(&kv.Status)
	applier := &apply.Applier{Client: r.Client}
	steps := apply.Steps(desired, apply.ChoosePath(kv.Status.TargetKubeVirtVersion, kv.Status.ObservedKubeVirtVersion))
	hold := kv.Status.RolloutHold
	for i, step := range steps {
		if step.Name == apply.StepVirtHandler {
			// A held rollout still runs: it writes the template under OnDelete
			// but replaces no pod (internal/rollout, Observation.Paused).
			handler, err := r.syncHandlerStep(ctx, kv, step, live)
			out.RecheckAfter = minPositive(out.RecheckAfter, handler.RequeueAfter)
			out.ProblemReason, out.ProblemMessage = handler.Reason, handler.Message
			if err != nil || !handler.Done {
				if hold != nil {
					hold.Step = step.Name
				}
				return out, err
			}
			continue
		}
		if step.Name == apply.StepExtras {
			others, err := apply.LiveOthers(ctx, reader, desired.Others)
			if err != nil {
				return out, err
			}
			maps.Copy(live, others)
		}
		writes := apply.Writes(apply.Plan(step.Objects, live, kv.Status.Generations))
		if len(writes) > 0 && hold != nil {
			hold.Step = step.Name // nothing new starts; what runs goes on
			return out, nil
		}
		if len(writes) > 0 {
			countDrift(kv, writes)
			log.FromContext(ctx).Info("applying", "step", step.Name, "writes", len(writes), "first", describe(writes[0]))
			gens, err := applier.ApplyByKind(ctx, writes, writeWorkers)
			kv.Status.Generations = apply.MergeGenerations(kv.Status.Generations, gens)
			if err != nil {
				return out, err
			}
		}
		if i == 0 {
			out.Created = true
		}
		if len(writes) > 0 && hasWorkloads(step) {
			return out, nil // the new generation is not observed yet
		}
		if !step.RolledOver(live, target) {
			return out, r.explainWait(ctx, kv, steps[i+1:], live, target, step, &out)
		}
	}
	out.RolledOver = true
	return out, nil
}

// explainWait runs when step has not rolled over: it reports a Deployment of the
// step whose pods on the target crash, and still judges a virt-handler canary
// under way in a later step (a crashing canary is rolled back whatever waits
// before it). The canary's failure, which changed something, is what Degraded
// says first.
func (r *Reconciler) explainWait(ctx context.Context, kv *v1.KubeVirt, later []apply.Step, live map[apply.ObjectRef]client.Object, target metadata.Target, step apply.Step, out *applyOutcome) error {
	reason, msg, err := r.failingDeployment(ctx, step, target)
	if err != nil {
		return err
	}
	if reason != "" {
		r.reportFailingDeployment(kv, out, reason, msg)
	}
	if !handlerRolloutUnderway(kv) {
		return nil
	}
	for _, s := range later {
		if s.Name != apply.StepVirtHandler {
			continue
		}
		handler, err := r.syncHandlerStep(ctx, kv, s, live)
		out.RecheckAfter = minPositive(out.RecheckAfter, handler.RequeueAfter)
		if handler.Reason != "" {
			out.ProblemReason, out.ProblemMessage = handler.Reason, handler.Message
		}
		return err
	}
	return nil
}

// desiredStrategy is the strategy with customizeComponents, certificates and
// operator metadata applied, without what the CR switches off and kinds the
// cluster does not serve.
func (r *Reconciler) desiredStrategy(ctx context.Context, kv *v1.KubeVirt, cfg *deployid.Config, s *strategy.Strategy) (*strategy.Strategy, time.Duration, error) {
	customized, err := apply.Customize(s, cfg)
	if err != nil {
		return nil, 0, err
	}
	policy, err := certs.PolicyFrom(kv.Spec.CertificateRotateStrategy)
	if err != nil {
		return nil, 0, err
	}
	secrets, configMaps, err := r.liveCertificateObjects(ctx, customized)
	if err != nil {
		return nil, 0, err
	}
	now := r.Clock.Now()
	filled, err := certs.Fill(customized, certs.Inputs{Secrets: secrets, ConfigMaps: configMaps, Policy: policy, Now: now, Issuer: certs.Issuer{}})
	if err != nil {
		return nil, 0, err
	}
	customized.Secrets = replaceByName(customized.Secrets, filled.Secrets)
	customized.ConfigMaps = replaceByName(customized.ConfigMaps, filled.ConfigMaps)
	certs.InjectCABundle(customized, filled.CABundle)
	served, err := apply.ServedOnly(apply.Enabled(customized, cfg), r.Client.RESTMapper())
	if err != nil {
		return nil, 0, err
	}
	desired := apply.Desired(served, cfg)
	var recheck time.Duration
	if !filled.NextCheck.IsZero() {
		recheck = max(filled.NextCheck.Sub(now), time.Second)
	}
	return desired, recheck, nil
}

func (r *Reconciler) liveCertificateObjects(ctx context.Context, s *strategy.Strategy) (map[types.NamespacedName]*corev1.Secret, map[types.NamespacedName]*corev1.ConfigMap, error) {
	reader := r.reader()
	secrets := map[types.NamespacedName]*corev1.Secret{}
	for _, want := range s.Secrets {
		live := &corev1.Secret{}
		if err := reader.Get(ctx, client.ObjectKeyFromObject(want), live); err == nil {
			secrets[client.ObjectKeyFromObject(want)] = live
		} else if !apierrors.IsNotFound(err) {
			return nil, nil, err
		}
	}
	configMaps := map[types.NamespacedName]*corev1.ConfigMap{}
	for _, want := range s.ConfigMaps {
		live := &corev1.ConfigMap{}
		if err := reader.Get(ctx, client.ObjectKeyFromObject(want), live); err == nil {
			configMaps[client.ObjectKeyFromObject(want)] = live
		} else if !apierrors.IsNotFound(err) {
			return nil, nil, err
		}
	}
	return secrets, configMaps, nil
}

// deleteOrphans removes managed objects the target strategy no longer has.
func (r *Reconciler) deleteOrphans(ctx context.Context, kv *v1.KubeVirt, desired *strategy.Strategy, cms []corev1.ConfigMap) error {
	live, err := apply.ListManaged(ctx, r.reader(), managedScope(r.Namespace, cms, desired), apply.KindsOf(desired.Others)...)
	if err != nil {
		return err
	}
	refs := apply.Refs(apply.Steps(desired, apply.Install))
	orphans := apply.Orphans(refs, live)
	if len(orphans) == 0 {
		return nil
	}
	applier := &apply.Applier{Client: r.Client}
	if _, err := applier.Apply(ctx, apply.Deletions(orphans, "not in the target install strategy")); err != nil {
		return err
	}
	kv.Status.Generations = apply.ForgetGenerations(kv.Status.Generations, orphans)
	r.event(kv, "DeletedObsoleteObjects", "Cleanup", fmt.Sprintf("Deleted %d objects the target install strategy no longer has", len(orphans)))
	return nil
}

// managedScope is where a managed object may be: the operator's namespace, and
// besides it every namespace the strategies write to and the monitoring
// namespace each cached strategy was generated with (monitoring that went away
// leaves its ServiceMonitor there). Others sorted.
func managedScope(own string, cms []corev1.ConfigMap, strategies ...*strategy.Strategy) apply.Scope {
	set := map[string]bool{}
	for _, s := range strategies {
		for _, o := range s.Objects() {
			set[o.GetNamespace()] = true
		}
	}
	for i := range cms {
		if meta, ok := strategy.Meta(&cms[i]); ok {
			set[meta.MonitorNamespace] = true
		}
	}
	delete(set, "")
	delete(set, own)
	scope := apply.Scope{Namespace: own}
	for ns := range set {
		scope.Others = append(scope.Others, ns)
	}
	sort.Strings(scope.Others)
	return scope
}

func replaceByName[T client.Object](all, replacements []T) []T {
	byKey := map[types.NamespacedName]T{}
	for _, o := range replacements {
		byKey[client.ObjectKeyFromObject(o)] = o
	}
	out := make([]T, 0, len(all))
	for _, o := range all {
		if rep, ok := byKey[client.ObjectKeyFromObject(o)]; ok {
			o = rep
		}
		out = append(out, o)
	}
	return out
}

func hasWorkloads(step apply.Step) bool {
	d, ds := step.Workloads()
	return len(d) > 0 || len(ds) > 0
}

func describe(a apply.Action) string {
	return fmt.Sprintf("%s %s (%s)", a.Op, apply.RefOf(a.Object), a.Reason)
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// DesiredStrategy is s as the operator would write it for kv and cfg
// (customized, certificates filled from the live ones, metadata stamped),
// read-only: `virt-operator plan` compares it with the live objects.
func DesiredStrategy(ctx context.Context, c client.Client, kv *v1.KubeVirt, cfg *deployid.Config, s *strategy.Strategy) (*strategy.Strategy, error) {
	r := &Reconciler{Client: c, Clock: clock.RealClock{}}
	desired, _, err := r.desiredStrategy(ctx, kv, cfg, s)
	return desired, err
}
