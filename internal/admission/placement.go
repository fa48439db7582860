package admission

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// What the API server's validation of a pod template (k8s.io/kubernetes'
// core validation, which this module cannot import) refuses in the placement
// the operator copies from spec.infra and spec.workloads, written from
// apimachinery's validators. A value it refuses fails every write of the
// component's Deployment or DaemonSet: the rollout would stall on it.

// nodePlacement checks a spec's nodePlacement as the pod templates carry it.
func nodePlacement(p *v1.NodePlacement, fld *field.Path) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := metav1validation.ValidateLabels(p.NodeSelector, fld.Child("nodeSelector"))
	errs = append(errs, tolerations(p.Tolerations, fld.Child("tolerations"))...)
	return append(errs, affinity(p.Affinity, fld.Child("affinity"))...)
}

// podPlacement checks the placement of a rendered pod template.
func podPlacement(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	return nodePlacement(&v1.NodePlacement{NodeSelector: spec.NodeSelector, Tolerations: spec.Tolerations, Affinity: spec.Affinity}, fld)
}

// objectMeta checks labels and annotations (their keys, values and total size).
func objectMeta(m *metav1.ObjectMeta, fld *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(m.Labels, fld.Child("labels"))
	return append(errs, apimachineryvalidation.ValidateAnnotations(m.Annotations, fld.Child("annotations"))...)
}

var taintEffects = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}

// tolerations: a key is a label name, or empty with operator Exists (every
// taint); the operator Equal (or empty) with a label value, or Exists with no
// value (Lt and Gt only behind an alpha gate); an effect of the three taint
// effects, NoExecute when tolerationSeconds is set.
func tolerations(ts []corev1.Toleration, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range ts {
		at := fld.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, at.Child("key"))...)
		} else if t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(at.Child("operator"), t.Operator, "must be Exists when key is empty (which tolerates every taint)"))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(at.Child("effect"), t.Effect, "must be NoExecute when tolerationSeconds is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(at.Child("value"), t.Value, msg))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(at.Child("value"), t.Value, "must be empty when operator is Exists"))
			}
		default:
			errs = append(errs, field.NotSupported(at.Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		if t.Effect != "" && !slices.Contains(taintEffects, t.Effect) {
			errs = append(errs, field.NotSupported(at.Child("effect"), t.Effect, taintEffects))
		}
	}
	return errs
}

func affinity(a *corev1.Affinity, fld *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		at := fld.Child("nodeAffinity")
		if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			terms := at.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
			if len(req.NodeSelectorTerms) == 0 {
				errs = append(errs, field.Required(terms, "must have at least one node selector term"))
			}
			for i, term := range req.NodeSelectorTerms {
				errs = append(errs, nodeSelectorTerm(term, true, terms.Index(i))...)
			}
		}
		for i, p := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			pat := at.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			errs = append(errs, weight(p.Weight, pat.Child("weight"))...)
			// Preferred terms may name label values no node has: the API server allows it.
			errs = append(errs, nodeSelectorTerm(p.Preference, false, pat.Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		errs = append(errs, interPod(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, fld.Child("podAffinity"))...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		errs = append(errs, interPod(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, fld.Child("podAntiAffinity"))...)
	}
	return errs
}

// interPod checks the terms of a pod affinity or anti-affinity.
func interPod(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, term := range required {
		errs = append(errs, podAffinityTerm(term, fld.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))...)
	}
	for i, w := range preferred {
		at := fld.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		errs = append(errs, weight(w.Weight, at.Child("weight"))...)
		errs = append(errs, podAffinityTerm(w.PodAffinityTerm, at.Child("podAffinityTerm"))...)
	}
	return errs
}

func weight(w int32, fld *field.Path) field.ErrorList {
	if w < 1 || w > 100 {
		return field.ErrorList{field.Invalid(fld, w, "must be in the range 1-100")}
	}
	return nil
}

// nodeSelectorTerm: each expression with a label name for key and the values
// its operator takes (label values when strict); each field expression on
// metadata.name, In or NotIn one node name.
func nodeSelectorTerm(term corev1.NodeSelectorTerm, strict bool, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, rq := range term.MatchExpressions {
		at := fld.Child("matchExpressions").Index(i)
		switch rq.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(rq.Values) == 0 {
				errs = append(errs, field.Required(at.Child("values"), "must be specified when operator is In or NotIn"))
			}
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			if len(rq.Values) > 0 {
				errs = append(errs, field.Forbidden(at.Child("values"), "may not be specified when operator is Exists or DoesNotExist"))
			}
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(rq.Values) != 1 {
				errs = append(errs, field.Required(at.Child("values"), "must be a single value when operator is Lt or Gt"))
			}
		default:
			errs = append(errs, field.Invalid(at.Child("operator"), rq.Operator, "not a valid selector operator"))
		}
		errs = append(errs, metav1validation.ValidateLabelName(rq.Key, at.Child("key"))...)
		if strict {
			for j, value := range rq.Values {
				for _, msg := range validation.IsValidLabelValue(value) {
					errs = append(errs, field.Invalid(at.Child("values").Index(j), value, msg))
				}
			}
		}
	}
	for i, rq := range term.MatchFields {
		at := fld.Child("matchFields").Index(i)
		if rq.Operator != corev1.NodeSelectorOpIn && rq.Operator != corev1.NodeSelectorOpNotIn {
			errs = append(errs, field.Invalid(at.Child("operator"), rq.Operator, "not a valid selector operator for a node field (In or NotIn)"))
		} else if len(rq.Values) != 1 {
			errs = append(errs, field.Required(at.Child("values"), "must be one value when operator is In or NotIn for a node field"))
		}
		if rq.Key != metav1.ObjectNameField {
			errs = append(errs, field.Invalid(at.Child("key"), rq.Key, fmt.Sprintf("not a valid field selector key (only %s)", metav1.ObjectNameField)))
		}
		for j, v := range rq.Values {
			for _, msg := range validation.IsDNS1123Subdomain(v) {
				errs = append(errs, field.Invalid(at.Child("values").Index(j), v, msg))
			}
		}
	}
	return errs
}

// podAffinityTerm: valid label and namespace selectors, namespace names, a
// topologyKey that is a label name, and matchLabelKeys and mismatchLabelKeys
// that are label names, only with a labelSelector, and none in both.
func podAffinityTerm(term corev1.PodAffinityTerm, fld *field.Path) field.ErrorList {
	opts := metav1validation.LabelSelectorValidationOptions{}
	errs := metav1validation.ValidateLabelSelector(term.LabelSelector, opts, fld.Child("labelSelector"))
	errs = append(errs, metav1validation.ValidateLabelSelector(term.NamespaceSelector, opts, fld.Child("namespaceSelector"))...)
	for i, ns := range term.Namespaces {
		for _, msg := range validation.IsDNS1123Label(ns) {
			errs = append(errs, field.Invalid(fld.Child("namespaces").Index(i), ns, msg))
		}
	}
	if term.TopologyKey == "" {
		errs = append(errs, field.Required(fld.Child("topologyKey"), "can not be empty"))
	} else {
		errs = append(errs, metav1validation.ValidateLabelName(term.TopologyKey, fld.Child("topologyKey"))...)
	}
	for _, keys := range []struct {
		name string
		keys []string
	}{{"matchLabelKeys", term.MatchLabelKeys}, {"mismatchLabelKeys", term.MismatchLabelKeys}} {
		if len(keys.keys) > 0 && term.LabelSelector == nil {
			errs = append(errs, field.Forbidden(fld.Child(keys.name), "must not be specified when labelSelector is not set"))
			continue
		}
		for i, k := range keys.keys {
			errs = append(errs, metav1validation.ValidateLabelName(k, fld.Child(keys.name).Index(i))...)
		}
	}
	for i, k := range term.MatchLabelKeys {
		if slices.Contains(term.MismatchLabelKeys, k) {
			errs = append(errs, field.Invalid(fld.Child("matchLabelKeys").Index(i), k, "exists in both matchLabelKeys and mismatchLabelKeys"))
		}
	}
	return errs
}
