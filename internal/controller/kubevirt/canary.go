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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/diagnose"
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

// syncHandlerStep runs the canary for every DaemonSet of the virt-handler
// step, and asks the pass to look again when the rollout needs it (a bake's
// end, a deadline, progress held back).
func (r *Reconciler) syncHandlerStep(ctx context.Context, s *scope, step apply.Step, live map[apply.ObjectRef]client.Object) (handlerOutcome, error) {
	_, daemonSets := step.Workloads()
	all := handlerOutcome{Done: true}
	for _, ds := range daemonSets {
		o, err := r.syncHandler(ctx, s, ds, live)
		if err != nil {
			return handlerOutcome{}, err
		}
		s.requeueAfter(o.RequeueAfter)
		all.Done = all.Done && o.Done
		if all.Reason == "" {
			all.Reason, all.Message, all.Warning = o.Reason, o.Message, o.Warning
		}
	}
	return all, nil
}

// syncHandler drives the virt-handler DaemonSet through the canary rollout
// (internal/rollout decides; this function only reads and writes). It reports
// whether the DaemonSet has rolled over to the target.
func (r *Reconciler) syncHandler(ctx context.Context, s *scope, desired *appsv1.DaemonSet, live map[apply.ObjectRef]client.Object) (handlerOutcome, error) {
	kv := s.kv
	action := apply.Plan([]client.Object{desired}, live, s.generations())[0]
	liveDS, _ := live[apply.RefOf(desired)].(*appsv1.DaemonSet)
	if liveDS == nil { // a new DaemonSet needs no canary
		if s.held() {
			return handlerOutcome{}, nil // created once the rollout goes on
		}
		return handlerOutcome{}, r.write(ctx, s, []apply.Action{action})
	}
	want := action.Object.(*appsv1.DaemonSet)
	// Its pods are judged against its own template's stamps: the deployment's
	// when the template changed, the running ones when only other inputs did
	// (apply.CarryStamps), and then no pod is replaced.
	target := metadata.TemplateTarget(&want.Spec.Template)
	// The list skips the deep copy (nothing below modifies a pod): copying
	// every virt-handler pod at 200 nodes dominated the reconcile.
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
		s.emit(eventNormal, "HandlerRolloutRetried", "HandlerRollout", "retrying the failed virt-handler rollout to "+target.Version+" from the canary, as "+metadata.RetryHandlerRolloutAnnotation+" asks")
		// A new rollout from Started: the rolled-back DaemonSet carries the
		// target's hash (the rollback rewrote only its template), so the change
		// is declared rather than detected.
		state = nil
	}
	nodeReady, err := r.nodeReadiness(ctx)
	if err != nil {
		return handlerOutcome{}, err
	}
	templateChanged := !metadata.IsUpToDate(&liveDS.Spec.Template, target) // the stamps were carried, or not

	obs := rollout.Observation{
		NodeReady:         nodeReady,
		DaemonSet:         liveDS,
		Pods:              pods.Items,
		Target:            target,
		Previous:          state,
		SpecChanged:       retry || templateChanged,
		GenerationUnknown: recordedGeneration(s.generations(), liveDS) != liveDS.Generation,
		Paused:            s.held(),
		Now:               s.now,
	}
	policy, problem := handlerPolicy(kv)
	if problem != "" { // not an error to retry: a spec change brings the operator back
		return handlerOutcome{Reason: ReasonInvalidConfig, Message: problem, Warning: ReasonInvalidConfig}, nil
	}
	if rollout.NeedsMigrations(obs, policy) {
		obs.Migrations = r.handlerMigrations()
	}
	if rollout.NeedsDataPlane(obs, policy) {
		if obs.DataPlane, err = r.dataPlane(ctx, kv); err != nil {
			return handlerOutcome{}, err
		}
	}
	d, err := rollout.Plan(obs, policy)
	if err != nil {
		return handlerOutcome{}, err
	}
	running, err := r.runningHandler(ctx, liveDS, obs.SpecChanged)
	if err != nil {
		return handlerOutcome{}, err
	}
	tmpl := rollout.PlanTemplate(running, want, d.Phase, obs.SpecChanged)
	if s := rollout.CleanupStrategy(d.Phase, tmpl, liveDS, policy, d.CleanupHeld); s != nil {
		d.UpdateStrategy = s
	}
	objectChanged := liveDS.Annotations[apply.DesiredHashAnnotation] != want.Annotations[apply.DesiredHashAnnotation]
	held, err := r.writeHandler(ctx, s, tmpl, liveDS, d, obs.SpecChanged || objectChanged)
	if err != nil {
		return handlerOutcome{}, err
	}
	if tmpl.DropCarried {
		s.emit(eventNormal, "HandlerCarriedOverDropped", "HandlerRollout", fmt.Sprintf(
			"every node runs the target: virt-handler drops what it kept from the previous template (%s), maxUnavailable %s",
			liveDS.Annotations[rollout.CarriedOverAnnotation], policy.FastStep.String()))
	}
	for _, name := range d.DeletePods {
		pod := &corev1.Pod{}
		pod.Namespace, pod.Name = liveDS.Namespace, name
		if err := r.Client.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
			return handlerOutcome{}, fmt.Errorf("deleting virt-handler pod %s for the rollout: %w", name, err)
		}
	}
	for _, w := range d.Expired {
		s.emit(eventWarning, rollout.ReasonMigrationWaitExpired, "HandlerRollout", expiredMessage(w, policy))
	}
	if err := r.actOnChecks(ctx, s, d); err != nil {
		return handlerOutcome{}, err
	}
	heldFor := recordHandlerDecision(ctx, s, d)
	// Dropping what the rollout carried over replaces every pod once more (at
	// the fast step): the step is done only when that has rolled over too.
	done := d.Done && !tmpl.DropCarried && apply.DaemonSetRolledOverExcept(liveDS, target, int32(len(d.LeftOut)))
	out := handlerOutcome{Done: done, RequeueAfter: minPositive(d.RequeueAfter, heldFor)}
	out.Reason, out.Message = handlerProblem(d, kv.Status.Conditions)
	if held {
		out.Message = noRollbackMessage(out.Message)
	}
	if out.Reason == "" && !done && stalled(d.State.ProgressAt, s.now) {
		refused, err := r.daemonSetRefused(ctx, liveDS, s.now)
		if err != nil {
			return handlerOutcome{}, err
		}
		if refused != "" {
			out.Reason, out.Warning = ReasonComponentPodsNotCreated, ReasonComponentPodsNotCreated
			out.Message = fmt.Sprintf("daemonset %s cannot create its pods: %s; the rollout holds until they can be created", liveDS.Name, refused)
			out.RequeueAfter = minPositive(out.RequeueAfter, componentRecheck)
		}
	}
	return out, nil
}

// refusalLookAfter is how long the rollout must have made no progress
// before virt-handler's DaemonSet's Events are read for a refusal: while its
// pods get updated, its controller creates them, and reading its Events on
// every pass of a fast step was an Events list a second.
const refusalLookAfter = 5 * time.Second

// stalled: no pod got updated or ready since refusalLookAfter (a progress
// never recorded is no progress).
func stalled(progressAt, now time.Time) bool {
	return progressAt.IsZero() || now.Sub(progressAt) >= refusalLookAfter
}

// refusalWindow is how recent a DaemonSet's FailedCreate Event must be to
// count: the DaemonSet controller repeats it on every retry (its backoff grows
// to minutes), and an old one from a refusal since fixed must not.
const refusalWindow = 15 * time.Minute

// daemonSetRefused is why ds's controller cannot create the pods it lacks (its
// latest recent FailedCreate Event); "" when it lacks none or nothing refused them.
func (r *Reconciler) daemonSetRefused(ctx context.Context, ds *appsv1.DaemonSet, now time.Time) (string, error) {
	if ds.Status.CurrentNumberScheduled >= ds.Status.DesiredNumberScheduled {
		return "", nil
	}
	// Only the refusals: while a rollout replaces pods the DaemonSet is short
	// on every pass, and its controller writes an Event per pod it creates or
	// deletes (at 1000 nodes, thousands to list on each pass).
	events, err := diagnose.Events(ctx, r.APIReaderOrClient(), ds, diagnose.ReasonFailedCreate)
	if err != nil {
		return "", err
	}
	var recent []corev1.Event
	for i := range events {
		if now.Sub(diagnose.EventTime(&events[i])) < refusalWindow {
			recent = append(recent, events[i])
		}
	}
	return diagnose.LastFailedCreate(recent, ds.UID, diagnose.DaemonSetController), nil
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
	Done bool
	// RequeueAfter is when this DaemonSet's rollout needs another look
	// (syncHandlerStep asks the pass for it).
	RequeueAfter time.Duration
	// Reason and Message of a Degraded condition, when the rollout failed or is stuck.
	Reason, Message string
	// Warning is the reason of a Warning Event for that condition; "" when the
	// rollout's own Event tells users.
	Warning string
}

// runningHandler is the DaemonSet whose template the rollout carries settings
// over from. While the template is changing (the write that starts a rollout,
// until the cache shows it) it is read from the API server: the carry-over is
// decided once, by that write, and the cache may not yet show an edit made
// just before the spec changed, whose TLS flags would then be lost. Otherwise
// the cached one: the running template is the operator's own write.
func (r *Reconciler) runningHandler(ctx context.Context, cached *appsv1.DaemonSet, templateChanging bool) (*appsv1.DaemonSet, error) {
	if !templateChanging {
		return cached, nil
	}
	fresh := &appsv1.DaemonSet{}
	if err := r.APIReaderOrClient().Get(ctx, client.ObjectKeyFromObject(cached), fresh); err != nil {
		return nil, fmt.Errorf("reading the running virt-handler DaemonSet: %w", err)
	}
	return fresh, nil
}

// writeHandler writes the desired template (with what the rollout carries
// over from the running one, see rollout.PlanTemplate) with the decided update
// strategy in one write (so a template never lands under a strategy that would
// spread it), or the previous template on a rollback; nothing when all is in
// place.
// It reports whether a rollback had no template to go back to and holds.
// changed: the desired DaemonSet differs from the live one (its template, or
// only its own metadata, which replaces no pod).
func (r *Reconciler) writeHandler(ctx context.Context, s *scope, tmpl rollout.TemplateWrite, liveDS *appsv1.DaemonSet, d rollout.Decision, changed bool) (held bool, err error) {
	obj := tmpl.DaemonSet.DeepCopy()
	obj.Spec.UpdateStrategy = liveDS.Spec.UpdateStrategy
	if d.UpdateStrategy != nil {
		obj.Spec.UpdateStrategy = *d.UpdateStrategy
	}
	rolledBack := false
	if d.Rollback {
		previous, err := r.previousHandlerTemplate(ctx, liveDS, s)
		if err != nil {
			return false, err
		}
		obj.Spec.Template, obj.Spec.UpdateStrategy, held = rollbackWrite(liveDS, previous, obj.Spec.UpdateStrategy)
		// The template hash describes the template written: kept at the
		// target's, apply.CarryStamps would take the rolled-back template's
		// stamps for the target's and put them on the failed version.
		obj.Annotations[apply.TemplateHashAnnotation] = apply.TemplateHash(&obj.Spec.Template)
		rolledBack = previous != nil &&
			liveDS.Spec.Template.Annotations[metadata.InstallStrategyIdentifierAnnotation] != previous.Annotations[metadata.InstallStrategyIdentifierAnnotation]
	}
	carriedChanged := liveDS.Annotations[rollout.CarriedOverAnnotation] != obj.Annotations[rollout.CarriedOverAnnotation]
	if !changed && !rolledBack && !carriedChanged && rollout.SameStrategy(obj.Spec.UpdateStrategy, liveDS.Spec.UpdateStrategy) {
		if d.RecordGeneration {
			s.wrote([]v1.GenerationStatus{handlerGeneration(liveDS)})
		}
		return held, nil
	}
	log.FromContext(ctx).Info("writing virt-handler", "phase", d.Phase, "strategy", rollout.StrategyString(obj.Spec.UpdateStrategy),
		"rollback", rolledBack, "carriedOver", tmpl.Carried, "droppingCarried", tmpl.DropCarried)
	gens, err := (&apply.Applier{Client: r.Client}).Apply(ctx, []apply.Action{{Op: apply.OpUpdate, Object: obj, Live: liveDS, Reason: "canary rollout " + string(d.Phase)}})
	s.wrote(gens)
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

// recordHandlerDecision puts the rollout's status into s.handler and its Event
// into s.Events. nextStatus may hold a status that only progressed back
// (handlerRolloutStatus); it returns when to look again to write it.
func recordHandlerDecision(ctx context.Context, s *scope, d rollout.Decision) (heldFor time.Duration) {
	if d.Status != nil {
		st := d.Status.DeepCopy()
		st.TargetID = d.State.TargetID
		s.handler = st
		_, heldFor = handlerRolloutStatus(s.kv.Status.HandlerRollout, st, s.now)
	}
	if d.Event != nil { // a phase change, which the status records
		s.Events = append(s.Events, kvEvent{Type: d.Event.Type, Reason: d.Event.Reason, Action: "HandlerRollout", Message: d.Event.Message, Transition: true})
		log.FromContext(ctx).Info("virt-handler rollout", "phase", d.Phase, "event", d.Event.Message)
	}
	return heldFor
}

// lastHandlerWrite is when a rollout status was last written for a change:
// its latest phase change or progress.
func lastHandlerWrite(st *v1.HandlerRolloutStatus) time.Time {
	var last time.Time
	if st == nil {
		return last
	}
	for _, t := range []*metav1.Time{st.PhaseChangeAt, st.LastProgressAt} {
		if t != nil && t.After(last) {
			last = t.Time
		}
	}
	return last
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
func (r *Reconciler) previousHandlerTemplate(ctx context.Context, ds *appsv1.DaemonSet, s *scope) (*corev1.PodTemplateSpec, error) {
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
	return rollbackTemplate(templates, s.cfg.ID, s.kv.Status.ObservedDeploymentID), nil
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

// handlerRolloutUnderway: a virt-handler rollout to the target has started
// and is not over. Its canary is then judged on every pass, even while an
// earlier step waits (on the install order, virt-api can start crashing after
// the canary began): a crashing canary is still rolled back.
func handlerRolloutUnderway(s *scope) bool {
	st := s.kv.Status.HandlerRollout
	if st == nil || st.TargetID != s.cfg.ID {
		return false
	}
	switch rollout.Phase(st.Phase) {
	case rollout.PhaseSuccessful, rollout.PhaseFailed:
		return false
	}
	return true
}
