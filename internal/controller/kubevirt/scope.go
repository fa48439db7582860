package kubevirt

import (
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/report"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/strategysource"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/uninstall"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// scope is one pass over the active KubeVirt CR: what its phases observed,
// did and concluded. Phases write here and to other objects, never to the CR's
// status: nextStatus derives the whole status from the previous one and the
// scope, once, when the pass ends. A phase's result is set only when the phase
// completed, so nil tells "this phase did not conclude" from "it found nothing".
type scope struct {
	// kv is the CR as read; its Status is the previous status, read-only.
	kv  *v1.KubeVirt
	now time.Time

	// ignored is why this CR is not the active one ("" when it is).
	ignored string

	// cfg is the target deployment config; nil when the spec or the operator's
	// environment gives none (problem says why).
	cfg *deployid.Config
	// changedKeys are the config keys a new target changed (nil: the target is
	// unchanged; empty: a first install, nothing to compare with).
	changedKeys []string
	// takeover is the deployment another operator recorded, which this one
	// takes over; nil when the status is this operator's own.
	takeover *takeover

	// strategies is the strategy phase's result; nil when it did not conclude.
	strategies *strategysource.Result
	// target is the target deployment, while its strategy is loaded; observed
	// the deployment that last rolled out everywhere, when it differs.
	target, observed *deployment

	// certificatesServed: the certificate controller keeps valid the
	// certificates of the deployments this pass prepared.
	certificatesServed bool

	// hold is what the hold phase concluded (why nothing new starts, and
	// where); nil when it did not conclude.
	hold *holdResult
	// preflight is this pass's preflight verdict; nil when none ran.
	preflight *preflightResult

	// written and forgotten are the generations of the objects this pass
	// wrote, and the objects it deleted: status.generations is the previous
	// record with them merged in (generations()).
	written   []v1.GenerationStatus
	forgotten []client.Object
	// objects is what the object phase concluded; nil when it did not.
	objects *objectsResult
	// handler is the virt-handler rollout's status as the canary decided it
	// this pass (nextStatus may hold a progress-only change back); nil: the
	// canary decided nothing.
	handler *v1.HandlerRolloutStatus
	// retained is what the retained-CRD phase concluded; nil when it did not.
	retained *retainedResult

	// deletion is where an uninstall stands (delete path only).
	deletion *uninstall.Result

	// Report holds the problem that stops the pass (as Degraded will say; the
	// first one recorded wins, so a later phase never hides an earlier
	// failure), the Events of what the phases did (emitted after the status
	// patch) and when to look again without an event.
	report.Report
}

// deployment is one deployment's strategy as the phases need it.
type deployment struct {
	cfg *deployid.Config
	// strategy is as decoded from its ConfigMap (shared with the decode cache:
	// never modified).
	strategy *strategy.Strategy
	// prepared is strategy customized for cfg without what cfg switches off
	// (apply.Prepare); nil when a customization does not apply.
	prepared *strategy.Strategy
	// desired is the desired state (apply.Complete), once the certificates are
	// served; nil before that or when it cannot be built.
	desired *strategy.Strategy
}

// problem is a Degraded condition's reason and message.
type problem = report.Problem

// kvEvent is an Event to emit on the CR.
type kvEvent = report.Event

// objectsResult is what the object phase concluded.
type objectsResult struct {
	// created: every prerequisite object exists; rolledOver: every step is
	// ready on the target.
	created, rolledOver bool
}

// retainedResult are the CRDs kept for their data though no deployment has
// them.
type retainedResult struct {
	crds []retainedCRD
}

// preflightResult is the preflight of one target.
type preflightResult struct {
	targetID string
	checks   []v1.PreflightCheck
	// passed, or why not (the Upgradeable condition).
	passed          bool
	reason, message string
	summary         string
}

// fail records p unless a problem is recorded already.
func (s *scope) fail(p problem) { s.Fail(p) }

// emit records an Event of something a phase did, for after the status patch.
func (s *scope) emit(typ, reason, action, message string) { s.Emit(typ, reason, action, message) }

// requeueAfter asks to look again within d (d ≤ 0 asks nothing).
func (s *scope) requeueAfter(d time.Duration) { s.RequeueAfter(d) }

// wrote records the generations of objects this pass wrote.
func (s *scope) wrote(gens []v1.GenerationStatus) {
	s.written = append(s.written, gens...)
}

// forget records objects this pass deleted.
func (s *scope) forget(objs []client.Object) {
	s.forgotten = append(s.forgotten, objs...)
}

// generations is status.generations as this pass leaves it: the previous
// record with the pass's writes merged in and its deletions forgotten.
func (s *scope) generations() []v1.GenerationStatus {
	gens := apply.MergeGenerations(slices.Clone(s.kv.Status.Generations), s.written)
	if len(s.forgotten) > 0 {
		gens = apply.ForgetGenerations(gens, s.forgotten)
	}
	return gens
}

// targetReady: the target's desired state is built (its strategy is loaded,
// customized, and its certificates filled).
func (s *scope) targetReady() bool { return s.target != nil && s.target.desired != nil }

// retain records a CRD kept for its data.
func (s *scope) retain(c retainedCRD) {
	if s.retained == nil {
		s.retained = &retainedResult{}
	}
	s.retained.crds = append(s.retained.crds, c)
}

// rolledOver: the object phase concluded that every step is ready on the
// target.
func (s *scope) rolledOver() bool { return s.objects != nil && s.objects.rolledOver }

// held: the rollout under way may start nothing new.
func (s *scope) held() bool { return s.hold.held() }

// holdAt records where a held rollout stopped.
func (s *scope) holdAt(step string) {
	if s.held() && s.hold.step == "" {
		s.hold.step = step
	}
}

// failHandler records a virt-handler rollout's problem, if it has one. A failed
// or stuck rollout's Warning is its own Event (naming the crashed pod).
func (s *scope) failHandler(h handlerOutcome) {
	if h.Reason != "" {
		s.fail(problem{Reason: h.Reason, Message: h.Message, Warning: h.Warning})
	}
}

func minPositive(a, b time.Duration) time.Duration { return report.MinPositive(a, b) }
