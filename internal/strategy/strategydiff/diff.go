// Package strategydiff compares two install strategies object by object and field by
// field: the fidelity test's judge of the builtin generator against a release's own
// --dump-install-strategy. Every difference is a path with both values; an allow-list
// of rules, each with its reason, marks the deliberate ones.
package strategydiff

import (
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/strategy"
)

// Field is one differing field: its path (".spec.template.spec.containers[0].env")
// and the two values, as JSON-like data (absent: nil with Missing set).
type Field struct {
	Path                  string
	Want, Got             any
	WantAbsent, GotAbsent bool
	// Allowed is the reason of the rule that allows it, "" when none does.
	Allowed string
}

func (f Field) String() string {
	show := func(v any, absent bool) string {
		if absent {
			return "<absent>"
		}
		s := fmt.Sprint(v)
		if len(s) > 160 {
			s = s[:160] + "..."
		}
		return s
	}
	return fmt.Sprintf("%s: want %s, got %s", f.Path, show(f.Want, f.WantAbsent), show(f.Got, f.GotAbsent))
}

// Object is the comparison of one object present in both strategies.
type Object struct {
	Ref    strategy.ObjectRef
	Fields []Field
}

// Disallowed are the fields no rule allows.
func (o Object) Disallowed() []Field {
	var out []Field
	for _, f := range o.Fields {
		if f.Allowed == "" {
			out = append(out, f)
		}
	}
	return out
}

// Report is the comparison of a wanted strategy (upstream's) with ours.
type Report struct {
	Identical []strategy.ObjectRef
	// Differing holds the objects with at least one differing field, allowed or not.
	Differing []Object
	// Missing are in want only; Extra in ours only. Allowed ones carry a reason.
	Missing, Extra []Presence
}

// Presence is an object found on one side only.
type Presence struct {
	Ref     strategy.ObjectRef
	Allowed string
}

// Rule allows a difference. Kind and Name match the object (Name is a path.Match
// pattern, "" for any); Path is a path.Match pattern over the field path (""
// matches a whole object missing or extra). Reason says why it is deliberate.
//
// An Unordered rule allows only a different order: the lists at Path are compared
// as multisets, and any other difference in them still counts.
type Rule struct {
	Kind, Name, Path, Reason string
	Unordered                bool
}

func (r Rule) matchesObject(ref strategy.ObjectRef) bool {
	if r.Kind != "" && r.Kind != ref.Kind {
		return false
	}
	if r.Name == "" {
		return true
	}
	ok, _ := path.Match(r.Name, ref.Name)
	return ok
}

func (r Rule) matchesField(ref strategy.ObjectRef, p string) bool {
	if r.Path == "" || !r.matchesObject(ref) {
		return false
	}
	ok, _ := path.Match(r.Path, p)
	return ok || strings.HasPrefix(p, r.Path+".") || strings.HasPrefix(p, r.Path+"[")
}

// Clean reports whether nothing differs beyond the allow-list.
func (r *Report) Clean() bool {
	for _, o := range r.Differing {
		if len(o.Disallowed()) > 0 {
			return false
		}
	}
	for _, p := range append(append([]Presence(nil), r.Missing...), r.Extra...) {
		if p.Allowed == "" {
			return false
		}
	}
	return true
}

// Compare compares ours with want, applying rules.
func Compare(want, ours *strategy.Strategy, rules []Rule) (*Report, error) {
	w, err := index(want)
	if err != nil {
		return nil, err
	}
	o, err := index(ours)
	if err != nil {
		return nil, err
	}
	rep := &Report{}
	for _, ref := range sortedRefs(w) {
		got, ok := o[ref]
		if !ok {
			rep.Missing = append(rep.Missing, Presence{Ref: ref, Allowed: objectRule(rules, ref)})
			continue
		}
		fields := diff(w[ref], got, "")
		fields = unordered(fields, w[ref], got, ref, rules)
		if len(fields) == 0 {
			rep.Identical = append(rep.Identical, ref)
			continue
		}
		for i := range fields {
			if fields[i].Allowed != "" {
				continue
			}
			for _, r := range rules {
				if !r.Unordered && r.matchesField(ref, fields[i].Path) {
					fields[i].Allowed = r.Reason
					break
				}
			}
		}
		rep.Differing = append(rep.Differing, Object{Ref: ref, Fields: fields})
	}
	for _, ref := range sortedRefs(o) {
		if _, ok := w[ref]; !ok {
			rep.Extra = append(rep.Extra, Presence{Ref: ref, Allowed: objectRule(rules, ref)})
		}
	}
	return rep, nil
}

// unordered replaces the fields under each Unordered rule's list by one allowed
// field when the two lists hold the same elements in another order.
func unordered(fields []Field, want, got map[string]any, ref strategy.ObjectRef, rules []Rule) []Field {
	for _, r := range rules {
		if !r.Unordered || !r.matchesObject(ref) {
			continue
		}
		wl, wok := listAt(want, r.Path)
		gl, gok := listAt(got, r.Path)
		if !wok || !gok || !sameElements(wl, gl) {
			continue
		}
		kept := fields[:0:0]
		for _, f := range fields {
			if !r.matchesField(ref, f.Path) {
				kept = append(kept, f)
			}
		}
		if len(kept) < len(fields) {
			kept = append(kept, Field{Path: r.Path, Want: "(same elements)", Got: "(another order)", Allowed: r.Reason})
		}
		fields = kept
	}
	return fields
}

// listAt follows a plain path (".a.b[0].c") to a list.
func listAt(obj map[string]any, p string) ([]any, bool) {
	var cur any = obj
	for _, part := range strings.Split(strings.TrimPrefix(p, "."), ".") {
		name, idx := part, -1
		if i := strings.Index(part, "["); i >= 0 {
			name = part[:i]
			if _, err := fmt.Sscanf(part[i:], "[%d]", &idx); err != nil {
				return nil, false
			}
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur = m[name]
		if idx >= 0 {
			l, ok := cur.([]any)
			if !ok || idx >= len(l) {
				return nil, false
			}
			cur = l[idx]
		}
	}
	l, ok := cur.([]any)
	return l, ok
}

func sameElements(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	used := make([]bool, len(b))
	for _, x := range a {
		found := false
		for j, y := range b {
			if !used[j] && len(diff(x, y, "")) == 0 {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func objectRule(rules []Rule, ref strategy.ObjectRef) string {
	for _, r := range rules {
		if r.Path == "" && r.matchesObject(ref) {
			return r.Reason
		}
	}
	return ""
}

// index maps every object of s to its JSON-like content, without status and
// creation timestamps (neither is part of a strategy).
func index(s *strategy.Strategy) (map[strategy.ObjectRef]map[string]any, error) {
	out := map[strategy.ObjectRef]map[string]any{}
	for _, obj := range s.Objects() {
		m, err := content(obj)
		if err != nil {
			return nil, err
		}
		kind, _ := m["kind"].(string)
		out[strategy.ObjectRef{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}] = m
	}
	return out, nil
}

func content(obj client.Object) (map[string]any, error) {
	var m map[string]any
	if u, ok := obj.(*unstructured.Unstructured); ok {
		m = runtime.DeepCopyJSON(u.Object)
	} else {
		var err error
		if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return nil, fmt.Errorf("%s: %w", obj.GetName(), err)
		}
	}
	delete(m, "status")
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(m, "spec", "template", "metadata", "creationTimestamp")
	return m, nil
}

// diff walks two JSON-like values; lists are compared element by element.
func diff(want, got any, p string) []Field {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			break
		}
		var out []Field
		for _, k := range unionKeys(w, g) {
			wv, wok := w[k]
			gv, gok := g[k]
			kp := p + "." + k
			switch {
			case !wok:
				out = append(out, Field{Path: kp, Got: gv, WantAbsent: true})
			case !gok:
				out = append(out, Field{Path: kp, Want: wv, GotAbsent: true})
			default:
				out = append(out, diff(wv, gv, kp)...)
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(w) != len(g) {
			break
		}
		var out []Field
		for i := range w {
			out = append(out, diff(w[i], g[i], fmt.Sprintf("%s[%d]", p, i))...)
		}
		return out
	}
	if reflect.DeepEqual(normalize(want), normalize(got)) {
		return nil
	}
	return []Field{{Path: p, Want: want, Got: got}}
}

// normalize makes numbers compare by value (int64 from typed objects, float64
// or int64 from JSON).
func normalize(v any) any {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case int32:
		return float64(n)
	case int:
		return float64(n)
	}
	return v
}

func unionKeys(a, b map[string]any) []string {
	seen := map[string]bool{}
	var out []string
	for k := range a {
		seen[k] = true
		out = append(out, k)
	}
	for k := range b {
		if !seen[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func sortedRefs(m map[strategy.ObjectRef]map[string]any) []strategy.ObjectRef {
	out := make([]strategy.ObjectRef, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
