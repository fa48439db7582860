package kubevirt

import (
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/report"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/strategysource"
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

	// hold is why the rollout starts nothing new (spec.paused, the windows, a
	// preflight); nil when nothing holds it. Step is set where it held.
	hold *v1.RolloutHoldStatus
	// preflight is this pass's preflight verdict; nil when none ran.
	preflight *preflightResult

	// generations is status.generations with this pass's writes merged in.
	generations []v1.GenerationStatus
	// created: every prerequisite object exists; rolledOver: every step is
	// ready on the target.
	created, rolledOver bool
	// handler is status.handlerRollout as this pass decided it (nil: unchanged).
	handler *v1.HandlerRolloutStatus
	// retained are the CRDs kept for their data though no deployment has them.
	retained []retainedCRD

	// deletion is where an uninstall stands (delete path only).
	deletion *deletionOutcome

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

// deletionOutcome is where an uninstall stands.
type deletionOutcome struct {
	// blocked is why the uninstall is held; "" when it is not.
	blocked string
	// remaining describes what is still being deleted; "" when it has just started.
	remaining string
	// failed is the error of this pass's deletions; "" when none failed.
	failed string
	// done: every object is gone and the finalizer can go.
	done bool
}

// preflightResult is the preflight of one target.
type preflightResult struct {
	status *v1.PreflightStatus
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

// wrote merges the generations of objects this pass wrote.
func (s *scope) wrote(gens []v1.GenerationStatus) {
	s.generations = apply.MergeGenerations(s.generations, gens)
}

// targetReady: the target's desired state is built (its strategy is loaded,
// customized, and its certificates filled).
func (s *scope) targetReady() bool { return s.target != nil && s.target.desired != nil }

// holdAt records where a held rollout stopped.
func (s *scope) holdAt(step string) {
	if s.hold != nil && s.hold.Step == "" {
		s.hold.Step = step
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
