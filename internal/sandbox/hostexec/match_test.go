package hostexec

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func podWithLabels(l map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: l}}
}

func TestMatcher(t *testing.T) {
	m, err := NewMatcher(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{Label: "true"}, true},
		{map[string]string{Label: "false"}, false},
		{map[string]string{"kubevirt.io": "virt-operator-strategy-dumper"}, true},
		{map[string]string{"kubevirt.io": "virt-api"}, false},
		{nil, false},
	} {
		if got := m.Matches(podWithLabels(tc.labels)); got != tc.want {
			t.Errorf("labels %v: Matches %v, want %v", tc.labels, got, tc.want)
		}
	}
	if got := m.Selectors(); !slices.Equal(got, []string{Label + "=true", "kubevirt.io=virt-operator-strategy-dumper"}) {
		t.Errorf("selectors %v", got)
	}
	const want = `(.metadata.labels["sandbox.virt-operator.io/host-exec"] == "true") or (.metadata.labels["kubevirt.io"] == "virt-operator-strategy-dumper")`
	if got := m.StageExpression(); got != want {
		t.Errorf("stage expression\n%s\nwant\n%s", got, want)
	}

	// Only the label.
	for _, sel := range [][]string{{}, {""}} {
		m, err := NewMatcher(sel)
		if err != nil || len(m.Selectors()) != 1 || m.Matches(podWithLabels(map[string]string{"kubevirt.io": "virt-operator-strategy-dumper"})) {
			t.Errorf("selectors %q: %v %v", sel, m.Selectors(), err)
		}
	}

	m, err = NewMatcher([]string{"a in (x,y),!b,c!=d", "e"})
	if err != nil {
		t.Fatal(err)
	}
	const want2 = `(.metadata.labels["sandbox.virt-operator.io/host-exec"] == "true") or ` +
		`((.metadata.labels["a"] == "x" or .metadata.labels["a"] == "y") and (((.metadata.labels // {}) | has("b")) | not) and .metadata.labels["c"] != "d") or ` +
		`(((.metadata.labels // {}) | has("e")))`
	if got := m.StageExpression(); got != want2 {
		t.Errorf("stage expression\n%s\nwant\n%s", got, want2)
	}
	if !m.Matches(podWithLabels(map[string]string{"a": "y"})) || m.Matches(podWithLabels(map[string]string{"a": "y", "b": ""})) ||
		!m.Matches(podWithLabels(map[string]string{"e": ""})) {
		t.Error("set-based selector mismatched")
	}

	for _, bad := range []string{"a>1", "a=(", " , "} {
		if _, err := NewMatcher([]string{bad}); err == nil {
			t.Errorf("selector %q accepted", bad)
		}
	}
}
