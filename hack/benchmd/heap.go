package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// The heap by owner: the scale scenario saves the operator's heap profile
// (scale-heap-NAME.pprof) after the drain and after the rest; each sampled
// allocation still in use is charged to whoever holds it, read off its stack.

const module = "github.com/virt-operator/virt-operator/"

// protoKind matches a generated protobuf decoder, which names the kind:
// k8s.io/api/core/v1.(*Pod).Unmarshal.
var protoKind = regexp.MustCompile(`^k8s\.io/api/[a-z0-9]+/v[0-9a-z]+\.\(\*(\w+)\)\.Unmarshal$`)

// owner names who holds an allocation from its stack's functions, leaf first:
// the Event recorder; else the informer cache (its watch and list decoding and
// its stores) by kind where the stack shows one (protobuf kinds by their
// decoder, CRDs by their schema's); else the operator's package nearest the
// allocation; else the libraries and the runtime.
func owner(stack []string) string {
	cache, crd, kind := false, false, ""
	for _, fn := range stack {
		switch {
		case strings.HasPrefix(fn, module+"internal/controller/eventrecorder."):
			return "Events (eventrecorder)"
		case strings.HasPrefix(fn, "k8s.io/client-go/tools/cache."), strings.HasPrefix(fn, "k8s.io/client-go/tools/pager."),
			strings.HasPrefix(fn, "k8s.io/apimachinery/pkg/watch.(*StreamWatcher)"):
			cache = true
		case strings.Contains(fn, "apiextensions/v1.(*JSONSchemaProps"), strings.Contains(fn, "apiextensions/v1.(*CustomResourceDefinition"):
			crd = true
		}
		if m := protoKind.FindStringSubmatch(fn); m != nil {
			kind = strings.TrimSuffix(m[1], "List") // the outermost decoder wins: a PolicyRule inside a ClusterRole is the ClusterRole's
		}
	}
	if cache {
		switch {
		case crd:
			return "cache: CustomResourceDefinition"
		case kind != "":
			return "cache: " + kind
		case decodesJSON(stack):
			return "cache: custom resources (JSON: VMIs, migrations, KubeVirt, instance types)"
		default:
			return "cache: stores, indexes and watch buffers"
		}
	}
	for _, fn := range stack {
		if pkg, ok := strings.CutPrefix(fn, module); ok {
			if i := strings.IndexAny(pkg, ".("); i > 0 {
				pkg = pkg[:i]
			}
			return strings.TrimSuffix(pkg, "/")
		}
	}
	return "libraries and runtime (scheme, codecs, clients)"
}

// decodesJSON says whether an allocation was made decoding JSON (custom
// resources have no protobuf encoding).
func decodesJSON(stack []string) bool {
	for _, fn := range stack {
		if strings.HasPrefix(fn, "sigs.k8s.io/json") || strings.HasPrefix(fn, "encoding/json") ||
			strings.HasPrefix(fn, "k8s.io/apimachinery/pkg/runtime/serializer/json") {
			return true
		}
	}
	return false
}

// heapByOwner sums a heap profile's in-use bytes by owner.
func heapByOwner(r io.Reader) (map[string]int64, error) {
	p, err := profile.Parse(r)
	if err != nil {
		return nil, err
	}
	index := -1
	for i, st := range p.SampleType {
		if st.Type == "inuse_space" {
			index = i
		}
	}
	if index < 0 {
		return nil, fmt.Errorf("no inuse_space samples: not a heap profile")
	}
	out := map[string]int64{}
	for _, s := range p.Sample {
		var stack []string
		for _, loc := range s.Location {
			for _, line := range loc.Line { // inlined frames first, as in the stack
				if line.Function != nil {
					stack = append(stack, line.Function.Name)
				}
			}
		}
		out[owner(stack)] += s.Value[index]
	}
	return out, nil
}

// heapSection renders the heap by owner of every scale-heap-*.pprof in dir,
// a column per profile, largest owner first; "" when there is none.
func heapSection(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "scale-heap-*.pprof"))
	if err != nil || len(files) == 0 {
		return "", err
	}
	sort.Slice(files, func(i, j int) bool { return profileName(files[i]) < profileName(files[j]) })
	byOwner := map[string][]int64{}
	totals := make([]int64, len(files))
	for i, file := range files {
		f, err := os.Open(file)
		if err != nil {
			return "", err
		}
		owners, err := heapByOwner(f)
		_ = f.Close()
		if err != nil {
			return "", fmt.Errorf("%s: %w", file, err)
		}
		for o, n := range owners {
			if byOwner[o] == nil {
				byOwner[o] = make([]int64, len(files))
			}
			byOwner[o][i] = n
			totals[i] += n
		}
	}
	names := make([]string, 0, len(byOwner))
	for o, sizes := range byOwner {
		if slices.Max(sizes) < smallOwner && o != otherOwners {
			if byOwner[otherOwners] == nil {
				byOwner[otherOwners] = make([]int64, len(files))
			}
			for i, n := range sizes {
				byOwner[otherOwners][i] += n
			}
			delete(byOwner, o)
			continue
		}
		names = append(names, o)
	}
	if byOwner[otherOwners] != nil && !slices.Contains(names, otherOwners) {
		names = append(names, otherOwners)
	}
	last := len(files) - 1
	sort.Slice(names, func(i, j int) bool {
		if a, b := byOwner[names[i]][last], byOwner[names[j]][last]; a != b {
			return a > b
		}
		return names[i] < names[j]
	})
	var s strings.Builder
	fmt.Fprintf(&s, "### The operator's live heap by owner (BenchmarkScale1000's heap profiles, in-use MiB)\n\n| Owner |")
	for _, f := range files {
		fmt.Fprintf(&s, " %s |", profileName(f))
	}
	s.WriteString("\n|---|" + strings.Repeat("---|", len(files)) + "\n")
	for _, o := range names {
		fmt.Fprintf(&s, "| %s |", o)
		for _, n := range byOwner[o] {
			fmt.Fprintf(&s, " %.1f |", mib(n))
		}
		s.WriteString("\n")
	}
	s.WriteString("| **total** |")
	for _, n := range totals {
		fmt.Fprintf(&s, " **%.1f** |", mib(n))
	}
	s.WriteString("\n\nCharged by each sampled allocation's stack (hack/benchmd/heap.go): the informer cache by kind where the decoder names it; " +
		"custom resources decode from JSON, which does not, so they share a row.\n")
	return s.String(), nil
}

// Owners below smallOwner in every profile share the otherOwners row.
const (
	smallOwner  = 100 << 10
	otherOwners = "owners under 0.1 MiB each"
)

func profileName(file string) string {
	return strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "scale-heap-"), ".pprof")
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
