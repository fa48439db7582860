package generate

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/virt-operator/virt-operator/internal/strategy"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// variants are the cluster facts the golden inventories cover.
var variants = []struct {
	golden string
	in     func(t *testing.T) Input
}{
	{"default", func(t *testing.T) Input { return Input{Config: config(t, nil)} }},
	{"monitoring", func(t *testing.T) Input { return Input{Config: config(t, nil), MonitorNamespace: "monitoring"} }},
	{"openshift", func(t *testing.T) Input { return Input{Config: config(t, nil), OpenShift: true} }},
	{"openshift-monitoring", func(t *testing.T) Input {
		return Input{Config: config(t, nil), MonitorNamespace: "openshift-monitoring", OpenShift: true}
	}},
}

func inventoryText(s *strategy.Strategy) string {
	var b strings.Builder
	for _, r := range s.Inventory() {
		b.WriteString(r.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// TestInventoryGolden pins kinds, names and namespaces of the default strategy.
// Run `go test ./internal/strategy/generate -run Golden -update` after a deliberate change.
func TestInventoryGolden(t *testing.T) {
	for _, v := range variants {
		t.Run(v.golden, func(t *testing.T) {
			got := inventoryText(mustGenerate(t, v.in(t)))
			path := filepath.Join("testdata", "inventory-"+v.golden+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("inventory differs from %s (run with -update if intended):\n%s", path, lineDiff(string(want), got))
			}
		})
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	in := func(text string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(text, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var out []string
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// TestCountsFollowUpstream states §3.2.1's counts per kind.
func TestCountsFollowUpstream(t *testing.T) {
	base := map[string]int{
		"CustomResourceDefinition": 19, "ServiceAccount": 5, "ClusterRole": 11, "ClusterRoleBinding": 8,
		"Role": 5, "RoleBinding": 5, "Service": 4, "Deployment": 4, "DaemonSet": 1,
		"ValidatingWebhookConfiguration": 2, "MutatingWebhookConfiguration": 2, "APIService": 2,
		"Secret": 14, "ConfigMap": 4, "ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1,
		// Not in upstream's strategy: its components need it, so ours creates it.
		"PriorityClass": 1,
	}
	with := func(extra map[string]int) map[string]int {
		out := map[string]int{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range extra {
			out[k] += v
		}
		return out
	}
	monitoring := map[string]int{"Role": 1, "RoleBinding": 1, "ServiceMonitor": 1, "PrometheusRule": 1}
	openshift := map[string]int{"SecurityContextConstraints": 2, "Route": 1}
	want := map[string]map[string]int{
		"default":              base,
		"monitoring":           with(monitoring),
		"openshift":            with(openshift),
		"openshift-monitoring": with(merge(monitoring, openshift)),
	}
	for _, v := range variants {
		t.Run(v.golden, func(t *testing.T) {
			got := map[string]int{}
			for _, r := range mustGenerate(t, v.in(t)).Inventory() {
				got[r.Kind]++
			}
			for kind := range merge(got, want[v.golden]) {
				if got[kind] != want[v.golden][kind] {
					t.Errorf("%s: %d, want %d", kind, got[kind], want[v.golden][kind])
				}
			}
		})
	}
}

func merge(a, b map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range a {
		out[k] += v
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}
