package generate

import (
	"github.com/virt-operator/virt-operator/internal/strategy"

	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var creationTimestamp = regexp.MustCompile(`(?m)^\s*creationTimestamp:`)

func TestRenderYAML(t *testing.T) {
	s := mustGenerate(t, Input{Config: config(t, nil), MonitorNamespace: "monitoring"})
	out, err := RenderYAML(s)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(strings.TrimPrefix(string(out), "---\n"), "\n---\n")
	if len(docs) != len(s.Objects()) {
		t.Fatalf("%d documents for %d objects", len(docs), len(s.Objects()))
	}
	seenOther := false
	for i, doc := range docs {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		kind, _ := m["kind"].(string)
		if m["apiVersion"] == nil || kind == "" {
			t.Errorf("document %d has no apiVersion or kind", i)
		}
		if kind == "CustomResourceDefinition" && seenOther {
			t.Errorf("document %d: a CRD after other kinds", i)
		}
		seenOther = seenOther || kind != "CustomResourceDefinition"
		if _, ok := m["status"]; ok {
			t.Errorf("document %d (%s) has a status", i, kind)
		}
		if creationTimestamp.MatchString(doc) {
			t.Errorf("document %d (%s) has a creationTimestamp", i, kind)
		}
	}
}

func BenchmarkGenerate(b *testing.B) {
	in := Input{Config: config(b, nil), MonitorNamespace: "monitoring"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Generate(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGenerateAndRender(b *testing.B) {
	in := Input{Config: config(b, nil), MonitorNamespace: "monitoring"}
	b.ReportAllocs()
	for b.Loop() {
		s, err := Generate(in)
		if err != nil {
			b.Fatal(err)
		}
		out, err := RenderYAML(s)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(out)), "yaml-bytes")
	}
}

// BenchmarkGenerateAndEncode is the install-strategy Job's work: the default
// strategy (with monitoring) generated and encoded into its ConfigMap. Targets:
// well under 100 ms, and an encoded payload under 512 KiB.
func BenchmarkGenerateAndEncode(b *testing.B) {
	cfg := config(b, nil)
	in := Input{Config: cfg, MonitorNamespace: "monitoring"}
	b.ReportAllocs()
	for b.Loop() {
		s, err := Generate(in)
		if err != nil {
			b.Fatal(err)
		}
		cm, err := strategy.Encode(s, cfg, in.MonitorNamespace)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(cm.Data[strategy.ManifestsKey])), "encoded-bytes")
	}
}
