package hostexec

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Label marks a pod for host execution: any pod labelled Label=LabelValue is run on
// the host, whatever the configured selectors.
const (
	Label      = "sandbox.virt-operator.io/host-exec"
	LabelValue = "true"
)

// DefaultSelectors are the label selectors that make a pod host-executed besides
// Label: the pods of the operator's install-strategy Jobs.
var DefaultSelectors = []string{"kubevirt.io=virt-operator-strategy-dumper"}

// Matcher decides which pods are host-executed: those labelled Label=LabelValue or
// matching any of its selectors.
type Matcher struct {
	raw       []string // label selector strings, Label's first
	selectors []labels.Selector
}

// NewMatcher builds a Matcher from label selector strings; nil means
// DefaultSelectors, empty strings are skipped (so []string{} or {""} leaves only
// Label). Only selectors that kwok's stages can mirror are accepted: =, ==, !=, in,
// notin, exists and !exists requirements; an empty selector, which would match
// every pod, is refused.
func NewMatcher(selectors []string) (*Matcher, error) {
	if selectors == nil {
		selectors = DefaultSelectors
	}
	m := &Matcher{}
	for _, s := range append([]string{Label + "=" + LabelValue}, selectors...) {
		if strings.TrimSpace(s) == "" {
			continue
		}
		sel, err := labels.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("host-exec selector %q: %w", s, err)
		}
		reqs, _ := sel.Requirements()
		if len(reqs) == 0 {
			return nil, fmt.Errorf("host-exec selector %q selects every pod", s)
		}
		for _, r := range reqs {
			if _, err := requirementExpr(r); err != nil {
				return nil, fmt.Errorf("host-exec selector %q: %w", s, err)
			}
		}
		m.raw = append(m.raw, sel.String())
		m.selectors = append(m.selectors, sel)
	}
	return m, nil
}

// Matches reports whether pod is host-executed.
func (m *Matcher) Matches(pod *corev1.Pod) bool {
	set := labels.Set(pod.Labels)
	for _, s := range m.selectors {
		if s.Matches(set) {
			return true
		}
	}
	return false
}

// Selectors returns the label selectors, Label's first: a pod matching any of them
// is host-executed. The runner watches pods with one informer per selector.
func (m *Matcher) Selectors() []string { return append([]string(nil), m.raw...) }

// StageExpression is a jq expression that kwok evaluates on a pod to "true" exactly
// when Matches holds. The sandbox's kwok stages that would make a pod Ready,
// complete it or crash-loop it require this expression to be NotIn ['true'], so kwok
// leaves host-executed pods to the runner (it still deletes them).
func (m *Matcher) StageExpression() string {
	var terms []string
	for _, s := range m.selectors {
		reqs, _ := s.Requirements()
		var parts []string
		for _, r := range reqs {
			e, _ := requirementExpr(r) // checked by NewMatcher
			parts = append(parts, e)
		}
		terms = append(terms, "("+strings.Join(parts, " and ")+")")
	}
	return strings.Join(terms, " or ")
}

// requirementExpr is the jq form of one label requirement. A missing label reads as
// null, which equals no string, as label selectors treat it.
func requirementExpr(r labels.Requirement) (string, error) {
	label := ".metadata.labels[" + jqString(r.Key()) + "]"
	has := "((.metadata.labels // {}) | has(" + jqString(r.Key()) + "))"
	values := r.ValuesUnsorted()
	join := func(op, conj string) string {
		var parts []string
		for _, v := range values {
			parts = append(parts, label+" "+op+" "+jqString(v))
		}
		if len(parts) == 1 {
			return parts[0]
		}
		return "(" + strings.Join(parts, " "+conj+" ") + ")"
	}
	switch r.Operator() {
	case selection.Equals, selection.DoubleEquals, selection.In:
		return join("==", "or"), nil
	case selection.NotEquals, selection.NotIn:
		return join("!=", "and"), nil
	case selection.Exists:
		return has, nil
	case selection.DoesNotExist:
		return "(" + has + " | not)", nil
	default:
		return "", fmt.Errorf("operator %q is not supported for host-exec selectors", r.Operator())
	}
}

// jqString quotes s as a jq string literal (JSON strings are jq strings; label keys
// and values hold no backslashes, so no "\(" interpolation can appear).
func jqString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
