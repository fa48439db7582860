package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

func TestOwner(t *testing.T) {
	watch := []string{"k8s.io/client-go/rest/watch.(*Decoder).Decode", "k8s.io/apimachinery/pkg/watch.(*StreamWatcher).receive"}
	json := append([]string{"reflect.mapassign0", "sigs.k8s.io/json/internal/golang/encoding/json.(*decodeState).object"}, watch...)
	cases := []struct {
		name  string
		stack []string
		want  string
	}{
		{"an Event the recorder holds", []string{"runtime.mallocgc", module + "internal/controller/eventrecorder.(*Recorder).Eventf"}, "Events (eventrecorder)"},
		{"a pod from a watch", append([]string{"k8s.io/api/core/v1.(*PodSpec).Unmarshal", "k8s.io/api/core/v1.(*Pod).Unmarshal"}, watch...), "cache: Pod"},
		{"a rule inside a listed ClusterRole", []string{"k8s.io/api/rbac/v1.(*PolicyRule).Unmarshal", "k8s.io/api/rbac/v1.(*ClusterRole).Unmarshal",
			"k8s.io/api/rbac/v1.(*ClusterRoleList).Unmarshal", "k8s.io/client-go/tools/pager.(*ListPager).List", "k8s.io/client-go/tools/cache.(*Reflector).list"}, "cache: ClusterRole"},
		{"a CRD's schema", append([]string{"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.(*JSONSchemaPropsOrArray).UnmarshalJSON"}, json...), "cache: CustomResourceDefinition"},
		{"a VMI's labels", json, "cache: custom resources (JSON: VMIs, migrations, KubeVirt, instance types)"},
		{"the store's map", []string{"internal/sync.newIndirectNode", "k8s.io/client-go/tools/cache.(*threadSafeMap).Add"}, "cache: stores, indexes and watch buffers"},
		{"the cache transform runs inside the informer", []string{module + "internal/operator.trimVMI", "k8s.io/client-go/tools/cache.(*DeltaFIFO).queueActionInternalLocked"}, "cache: stores, indexes and watch buffers"},
		{"the operator's own state", []string{"runtime.makemap", module + "internal/strategy.(*Cache).put", module + "internal/controller/kubevirt.(*Reconciler).Reconcile"}, "internal/strategy"},
		{"a method on a value receiver", []string{module + "internal/rollout.Plan"}, "internal/rollout"},
		{"scheme registration", []string{"k8s.io/apimachinery/pkg/runtime.(*Scheme).AddKnownTypeWithName", "main.main"}, "libraries and runtime (scheme, codecs, clients)"},
		{"no stack", nil, "libraries and runtime (scheme, codecs, clients)"},
	}
	for _, c := range cases {
		if got := owner(c.stack); got != c.want {
			t.Errorf("%s: owner = %q, want %q", c.name, got, c.want)
		}
	}
}

// heapProfile writes a heap profile whose samples have the given stacks
// (leaf first) and in-use bytes.
func heapProfile(t *testing.T, path string, samples map[string]int64) {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}, {Type: "inuse_space", Unit: "bytes"}},
		PeriodType: &profile.ValueType{Type: "space", Unit: "bytes"},
	}
	id := uint64(1)
	for stack, n := range samples {
		var locs []*profile.Location
		for _, name := range strings.Split(stack, ";") {
			fn := &profile.Function{ID: id, Name: name}
			loc := &profile.Location{ID: id, Line: []profile.Line{{Function: fn}}}
			p.Function = append(p.Function, fn)
			p.Location = append(p.Location, loc)
			locs = append(locs, loc)
			id++
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{n * 10, n}})
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestHeapSection(t *testing.T) {
	dir := t.TempDir()
	pod := "k8s.io/api/core/v1.(*Pod).Unmarshal;k8s.io/apimachinery/pkg/watch.(*StreamWatcher).receive"
	events := module + "internal/controller/eventrecorder.(*Recorder).Eventf"
	heapProfile(t, filepath.Join(dir, "scale-heap-drained.pprof"), map[string]int64{pod: 2 << 20, events: 3 << 20})
	heapProfile(t, filepath.Join(dir, "scale-heap-rested.pprof"), map[string]int64{pod: 2 << 20, events: 1 << 20, "main.main": 1 << 19,
		module + "internal/rollout.Plan": 10 << 10, module + "internal/apply.Prepare": 20 << 10})
	got, err := heapSection(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| Owner | drained | rested |", "| cache: Pod | 2.0 | 2.0 |", "| Events (eventrecorder) | 3.0 | 1.0 |",
		"| libraries and runtime (scheme, codecs, clients) | 0.0 | 0.5 |", "| owners under 0.1 MiB each | 0.0 | 0.0 |", "| **total** | **5.0** | **3.5** |"} {
		if !strings.Contains(got, want) {
			t.Errorf("section lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "cache: Pod") > strings.Index(got, "Events (eventrecorder)") {
		t.Errorf("owners not largest first by the last profile:\n%s", got)
	}
}

func TestHeapSectionBadInput(t *testing.T) {
	dir := t.TempDir()
	if got, err := heapSection(dir); got != "" || err != nil {
		t.Fatalf("no profiles: %q, %v; want nothing", got, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scale-heap-x.pprof"), []byte("not a profile"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := heapSection(dir); err == nil || !strings.Contains(err.Error(), "scale-heap-x.pprof") {
		t.Fatalf("a corrupt profile: err = %v, want one naming the file", err)
	}
}
