package kubevirt

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/rollout"
)

// The canary deletes old virt-handler pods and reads the DaemonSet's history
// to roll a bad version back.
// +kubebuilder:rbac:groups="",namespace=kubevirt,resources=pods,verbs=delete
// +kubebuilder:rbac:groups=apps,namespace=kubevirt,resources=controllerrevisions,verbs=list;watch

// Reasons of the Degraded condition the virt-handler rollout sets.
const (
	// ReasonHandlerRolloutFailed: the virt-handler canary crashed and was rolled back.
	ReasonHandlerRolloutFailed = "HandlerRolloutFailed"
	// ReasonHandlerRolloutStuck: a rollout phase outlived spec.handlerRollout.progressDeadline.
	ReasonHandlerRolloutStuck = "HandlerRolloutStuck"
)

// syncHandlerStep runs the canary for every DaemonSet of the virt-handler step.
func (r *Reconciler) syncHandlerStep(ctx context.Context, kv *v1.KubeVirt, step apply.Step, live map[apply.ObjectRef]client.Object) (handlerOutcome, error) {
	_, daemonSets := step.Workloads()
	all := handlerOutcome{Done: true}
	for _, ds := range daemonSets {
		o, err := r.syncHandler(ctx, kv, ds, live)
		if err != nil {
			return handlerOutcome{}, err
		}
		all.Done, all.RequeueAfter = all.Done && o.Done, minPositive(all.RequeueAfter, o.RequeueAfter)
		if all.Reason == "" {
			all.Reason, all.Message = o.Reason, o.Message
		}
	}
	return all, nil
}

// syncHandler drives the virt-handler DaemonSet through the canary rollout
// (internal/rollout decides; this function only reads and writes). It reports
// whether the DaemonSet has rolled over to the target.
func (r *Reconciler) syncHandler(ctx context.Context, kv *v1.KubeVirt, desired *appsv1.DaemonSet, live map[apply.ObjectRef]client.Object) (handlerOutcome, error) {
	applier := &apply.Applier{Client: r.Client}
	action := apply.Plan([]client.Object{desired}, live, kv.Status.Generations)[0]
	liveDS, _ := live[apply.RefOf(desired)].(*appsv1.DaemonSet)
	if liveDS == nil { // a new DaemonSet needs no canary
		gens, err := applier.Apply(ctx, []apply.Action{action})
		kv.Status.Generations = apply.MergeGenerations(kv.Status.Generations, gens)
		return handlerOutcome{}, err
	}
	target := metadata.TargetFromStatus(&kv.Status)
	// Read-only (nothing below modifies a pod): without the copy a reconcile at
	// 200 nodes spends most of its time deep-copying virt-handler pods.
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(liveDS.Namespace), client.MatchingLabels(desired.Spec.Selector.MatchLabels), client.UnsafeDisableDeepCopy); err != nil {
		return handlerOutcome{}, err
	}
	stored := kv.Status.HandlerRollout
	var state *rollout.State
	if stored != nil {
		state = rollout.StateFromStatus(stored, stored.TargetID)
	}
	retry := retryRequested(kv, state, target)
	if retry {
		if err := r.clearRetryAnnotation(ctx, kv); err != nil {
			return handlerOutcome{}, err
		}
		r.event(kv, "HandlerRolloutRetried", "HandlerRollout", "retrying the failed virt-handler rollout to "+target.Version+" from the canary, as "+metadata.RetryHandlerRolloutAnnotation+" asks")
		// A new rollout from Started: the rolled-back DaemonSet carries the
		// target's hash (the rollback rewrote only its template), so the change
		// is declared rather than detected.
		state = nil
	}
	nodeReady, err := r.nodeReadiness(ctx)
	if err != nil {
		return handlerOutcome{}, err
	}
	want := action.Object.(*appsv1.DaemonSet)
	obs := rollout.Observation{
		NodeReady:         nodeReady,
		DaemonSet:         liveDS,
		Pods:              pods.Items,
		Target:            target,
		Previous:          state,
		SpecChanged:       retry || liveDS.Annotations[apply.DesiredHashAnnotation] != want.Annotations[apply.DesiredHashAnnotation],
		GenerationUnknown: recordedGeneration(kv.Status.Generations, liveDS) != liveDS.Generation,
		Paused:            kv.Status.RolloutHold != nil,
		Now:               r.Clock.Now(),
	}
	policy, problem := handlerPolicy(kv)
	if problem != "" { // not an error to retry: a spec change brings the operator back
		return handlerOutcome{Reason: ReasonInvalidConfig, Message: problem}, nil
	}
	d, err := rollout.Plan(obs, policy)
	if err != nil {
		return handlerOutcome{}, err
	}
	tmpl := rollout.PlanTemplate(liveDS, want, d.Phase, obs.SpecChanged)
	if s := rollout.CleanupStrategy(d.Phase, tmpl, liveDS, policy); s != nil {
		d.UpdateStrategy = s
	}
	held, err := r.writeHandler(ctx, kv, tmpl, liveDS, d, obs.SpecChanged, applier)
	if err != nil {
		return handlerOutcome{}, err
	}
	if tmpl.DropCarried {
		r.event(kv, "HandlerCarriedOverDropped", "HandlerRollout", fmt.Sprintf(
			"every node runs the target: virt-handler drops what it kept from the previous template (%s), maxUnavailable %s",
			liveDS.Annotations[rollout.CarriedOverAnnotation], policy.FastStep.String()))
	}
	for _, name := range d.DeletePods {
		pod := &corev1.Pod{}
		pod.Namespace, pod.Name = liveDS.Namespace, name
		if err := r.Client.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
			return handlerOutcome{}, fmt.Errorf("deleting virt-handler pod %s for the canary: %w", name, err)
		}
	}
	heldFor := r.recordHandlerDecision(ctx, kv, d)
	// Dropping what the rollout carried over replaces every pod once more (at
	// the fast step): the step is done only when that has rolled over too.
	done := d.Done && !tmpl.DropCarried && apply.DaemonSetRolledOverExcept(liveDS, target, int32(len(d.LeftOut)))
	reason, message := handlerProblem(d, kv.Status.Conditions)
	if held {
		message = noRollbackMessage(message)
	}
	return handlerOutcome{Done: done, RequeueAfter: minPositive(d.RequeueAfter, heldFor), Reason: reason, Message: message}, nil
}

// nodeReadiness is every node by name, true when its Ready condition is True.
func (r *Reconciler) nodeReadiness(ctx context.Context) (map[string]bool, error) {
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	out := make(map[string]bool, len(nodes.Items))
	for i := range nodes.Items {
		out[nodes.Items[i].Name] = metadata.NodeIsReady(&nodes.Items[i])
	}
	return out, nil
}

// retryRequested: the CR asks to retry a rollout that failed for this target.
func retryRequested(kv *v1.KubeVirt, state *rollout.State, target metadata.Target) bool {
	_, asked := kv.Annotations[metadata.RetryHandlerRolloutAnnotation]
	return asked && state != nil && state.Phase == rollout.PhaseFailed && state.TargetID == target.ID
}

// clearRetryAnnotation removes the retry request, from a copy with an
// optimistic lock (the response must not replace this pass's status): a
// request is honoured once.
func (r *Reconciler) clearRetryAnnotation(ctx context.Context, kv *v1.KubeVirt) error {
	obj := kv.DeepCopy()
	patch := client.MergeFromWithOptions(kv.DeepCopy(), client.MergeFromWithOptimisticLock{})
	delete(obj.Annotations, metadata.RetryHandlerRolloutAnnotation)
	if err := r.Client.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("removing %s: %w", metadata.RetryHandlerRolloutAnnotation, err)
	}
	kv.Annotations, kv.ResourceVersion = obj.Annotations, obj.ResourceVersion
	return nil
}

// handlerOutcome is where one virt-handler DaemonSet's rollout stands.
type handlerOutcome struct {
	Done         bool
	RequeueAfter time.Duration
	// Reason and Message of a Degraded condition, when the rollout failed or is stuck.
	Reason, Message string
}

// writeHandler writes the desired template (with what the rollout carries
// over from the running one, see rollout.PlanTemplate) with the decided update
// strategy in one write (so a template never lands under a strategy that would
// spread it), or the previous template on a rollback; nothing when all is in
// place.
// It reports whether a rollback had no template to go back to and holds.
func (r *Reconciler) writeHandler(ctx context.Context, kv *v1.KubeVirt, tmpl rollout.TemplateWrite, liveDS *appsv1.DaemonSet, d rollout.Decision, specChanged bool, applier *apply.Applier) (held bool, err error) {
	obj := tmpl.DaemonSet.DeepCopy()
	obj.Spec.UpdateStrategy = liveDS.Spec.UpdateStrategy
	if d.UpdateStrategy != nil {
		obj.Spec.UpdateStrategy = *d.UpdateStrategy
	}
	rolledBack := false
	if d.Rollback {
		previous, err := r.previousHandlerTemplate(ctx, liveDS, kv)
		if err != nil {
			return false, err
		}
		obj.Spec.Template, obj.Spec.UpdateStrategy, held = rollbackWrite(liveDS, previous, obj.Spec.UpdateStrategy)
		rolledBack = previous != nil &&
			liveDS.Spec.Template.Annotations[metadata.InstallStrategyIdentifierAnnotation] != previous.Annotations[metadata.InstallStrategyIdentifierAnnotation]
	}
	carriedChanged := liveDS.Annotations[rollout.CarriedOverAnnotation] != obj.Annotations[rollout.CarriedOverAnnotation]
	if !specChanged && !rolledBack && !carriedChanged && rollout.SameStrategy(obj.Spec.UpdateStrategy, liveDS.Spec.UpdateStrategy) {
		if d.RecordGeneration {
			kv.Status.Generations = apply.MergeGenerations(kv.Status.Generations, []v1.GenerationStatus{handlerGeneration(liveDS)})
		}
		return held, nil
	}
	log.FromContext(ctx).Info("writing virt-handler", "phase", d.Phase, "strategy", rollout.StrategyString(obj.Spec.UpdateStrategy),
		"rollback", rolledBack, "carriedOver", tmpl.Carried, "droppingCarried", tmpl.DropCarried)
	gens, err := applier.Apply(ctx, []apply.Action{{Op: apply.OpUpdate, Object: obj, Live: liveDS, Reason: "canary rollout " + string(d.Phase)}})
	kv.Status.Generations = apply.MergeGenerations(kv.Status.Generations, gens)
	return held, err
}

// rollbackWrite is what a rollback writes: the previous template under the
// decided strategy or, when the history holds none to go back to, the live
// template held under OnDelete, so the failed version spreads no further.
func rollbackWrite(live *appsv1.DaemonSet, previous *corev1.PodTemplateSpec, decided appsv1.DaemonSetUpdateStrategy) (
	corev1.PodTemplateSpec, appsv1.DaemonSetUpdateStrategy, bool) {
	if previous == nil {
		return live.Spec.Template, appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}, true
	}
	return *previous, decided, false
}

// noRollbackSuffix ends the Degraded message of a rollback with nothing to go back to.
const noRollbackSuffix = "; the DaemonSet's history has no earlier template to roll back to, so it holds (OnDelete) " +
	"with the failed version where it already runs: set spec.imageTag to a working version"

// noRollbackMessage is failure with noRollbackSuffix, once: handlerProblem may
// hand back the Degraded message of an earlier pass, which already has it.
func noRollbackMessage(failure string) string {
	if strings.HasSuffix(failure, noRollbackSuffix) {
		return failure
	}
	return failure + noRollbackSuffix
}

// recordHandlerDecision puts the rollout into status, events and conditions.
// A status that only progressed since the last write may be held back for up
// to rollout.ProgressInterval; it returns when to look again to write it.
func (r *Reconciler) recordHandlerDecision(ctx context.Context, kv *v1.KubeVirt, d rollout.Decision) (heldFor time.Duration) {
	if d.Status != nil {
		st := d.Status.DeepCopy()
		st.TargetID = d.State.TargetID
		now := r.Clock.Now()
		hold, after := rollout.HoldProgress(kv.Status.HandlerRollout, st, r.progressWrittenAt, now)
		switch {
		case hold:
			heldFor = after
		case !equality.Semantic.DeepEqual(kv.Status.HandlerRollout, st):
			kv.Status.HandlerRollout = st
			r.progressWrittenAt = now
		}
	}
	if d.Event != nil && r.Recorder != nil {
		r.Recorder.Eventf(kv, nil, d.Event.Type, d.Event.Reason, "HandlerRollout", "%s", d.Event.Message)
		log.FromContext(ctx).Info("virt-handler rollout", "phase", d.Phase, "event", d.Event.Message)
	}
	return heldFor
}

// handlerProblem is the Degraded reason and message a decision calls for
// (the rollout's own Event has already told users); "" when none. A failure
// keeps the message that named the crashed pod, not the rollback's progress.
func handlerProblem(d rollout.Decision, current []v1.KubeVirtCondition) (reason, message string) {
	switch {
	case d.Phase == rollout.PhaseFailed:
		message = "virt-handler rollout failed and was rolled back"
		if d.Degraded != "" {
			message = d.Degraded
		}
		if c := findCondition(current, v1.KubeVirtConditionDegraded); c != nil && c.Reason == ReasonHandlerRolloutFailed {
			message = c.Message
		}
		if d.Event != nil && d.Event.Reason == rollout.ReasonFailedUpdate {
			message = d.Event.Message
		}
		return ReasonHandlerRolloutFailed, message
	case d.Degraded != "":
		return ReasonHandlerRolloutStuck, d.Degraded
	}
	return "", ""
}

// previousHandlerTemplate is what a failed canary rolls back to, from the
// DaemonSet's history: see rollbackTemplate.
func (r *Reconciler) previousHandlerTemplate(ctx context.Context, ds *appsv1.DaemonSet, kv *v1.KubeVirt) (*corev1.PodTemplateSpec, error) {
	revs := &appsv1.ControllerRevisionList{}
	if err := r.Client.List(ctx, revs, client.InNamespace(ds.Namespace), client.MatchingLabels(ds.Spec.Selector.MatchLabels)); err != nil {
		return nil, err
	}
	sort.Slice(revs.Items, func(i, j int) bool { return revs.Items[i].Revision > revs.Items[j].Revision })
	var templates []corev1.PodTemplateSpec
	for _, rev := range revs.Items {
		var patch struct {
			Spec struct {
				Template corev1.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(rev.Data.Raw, &patch); err != nil || len(patch.Spec.Template.Spec.Containers) == 0 {
			continue
		}
		templates = append(templates, patch.Spec.Template)
	}
	return rollbackTemplate(templates, kv.Status.TargetDeploymentID, kv.Status.ObservedDeploymentID), nil
}

// rollbackTemplate picks, among templates (newest first), the newest of the
// observed deployment, the last one that rolled out everywhere; without one,
// the newest that is not the target's. A failed target's template is never
// picked while the observed one is there: after a failed canary of one bad
// version and then of another, the rollback must not restore the first.
func rollbackTemplate(templates []corev1.PodTemplateSpec, targetID, observedID string) *corev1.PodTemplateSpec {
	id := func(t corev1.PodTemplateSpec) string {
		return t.Annotations[metadata.InstallStrategyIdentifierAnnotation]
	}
	for i := range templates {
		if observedID != "" && id(templates[i]) == observedID {
			return &templates[i]
		}
	}
	for i := range templates {
		if id(templates[i]) != targetID {
			return &templates[i]
		}
	}
	return nil
}

func recordedGeneration(gens []v1.GenerationStatus, ds *appsv1.DaemonSet) int64 {
	for _, g := range gens {
		if g.Resource == "daemonsets" && g.Namespace == ds.Namespace && g.Name == ds.Name {
			return g.LastGeneration
		}
	}
	return -1
}

func handlerGeneration(ds *appsv1.DaemonSet) v1.GenerationStatus {
	return v1.GenerationStatus{Group: "apps", Resource: "daemonsets", Namespace: ds.Namespace, Name: ds.Name,
		LastGeneration: ds.Generation, Hash: ds.Annotations[apply.DesiredHashAnnotation]}
}

// handlerPolicy is spec.handlerRollout as a rollout policy, or what is wrong with it.
func handlerPolicy(kv *v1.KubeVirt) (rollout.Policy, string) {
	p, err := rollout.PolicyFrom(kv.Spec.HandlerRollout)
	if err != nil {
		return p, err.Error()
	}
	return p, ""
}
