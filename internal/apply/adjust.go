package apply

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/virt-operator/virt-operator/internal/strategy"
)

// Adjustment is one deliberate difference from upstream's objects, the same
// for every release (builtin or delegated to its own operator): what it
// changes, and why (docs/user/compatibility.md lists them).
type Adjustment struct {
	Name, Reason string
	Apply        func(s *strategy.Strategy)
}

// Adjustments are this operator's changes to every release's strategy.
var Adjustments = []Adjustment{{
	Name: "the KubeVirt CR's update webhook is called only when the spec changes",
	Reason: "an update that leaves the spec as it was decides nothing (the webhook allows it anyway), so it must not need the operator: " +
		"with the operator down, unready or its certificate expired, removing a finalizer or a label is still admitted",
	Apply: func(s *strategy.Strategy) {
		for _, c := range s.ValidatingWebhookConfigurations {
			for i := range c.Webhooks {
				if w := &c.Webhooks[i]; isKubeVirtUpdateWebhook(w) {
					w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: SpecChangedCondition, Expression: "object.spec != oldObject.spec"}}
				}
			}
		}
	},
}}

// SpecChangedCondition names the update webhook's match condition.
const SpecChangedCondition = "spec-changed"

// isKubeVirtUpdateWebhook: the operator's own webhook for updates of the KubeVirt CR.
func isKubeVirtUpdateWebhook(w *admissionregistrationv1.ValidatingWebhook) bool {
	svc := w.ClientConfig.Service
	if svc == nil || svc.Path == nil || *svc.Path != "/kubevirt-validate-update" {
		return false
	}
	for _, r := range w.Rules {
		for _, res := range r.Resources {
			if res == "kubevirts" {
				return true
			}
		}
	}
	return false
}

// Adjust applies every Adjustment to s, in place (call it on a copy: Prepare does).
func Adjust(s *strategy.Strategy) *strategy.Strategy {
	for _, a := range Adjustments {
		a.Apply(s)
	}
	return s
}
