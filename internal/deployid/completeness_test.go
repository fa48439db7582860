package deployid

import (
	"encoding"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// A step walks one level down from a settable value, allocating what is missing
// (a nil pointer, an empty slice), and returns the settable child.
type step func(reflect.Value) reflect.Value

// leafPath is how to reach one leaf of Config and how to change it.
type leafPath struct {
	name   string
	steps  []step
	mutate func(reflect.Value) // sets the (zero) leaf to a non-zero value
}

func (p leafPath) reach(cfg *Config) reflect.Value {
	v := reflect.ValueOf(cfg).Elem()
	for _, s := range p.steps {
		v = s(v)
	}
	return v
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// collectLeaves lists every leaf under t. It fails on any kind it cannot mutate
// and on types with their own JSON encoding, so a new kind of field makes this test
// fail instead of going unchecked.
func collectLeaves(t *testing.T, typ reflect.Type, name string, steps []step, seen map[reflect.Type]bool) []leafPath {
	t.Helper()
	if typ.Implements(jsonMarshalerType) || reflect.PointerTo(typ).Implements(jsonMarshalerType) ||
		typ.Implements(textMarshalerType) || reflect.PointerTo(typ).Implements(textMarshalerType) {
		t.Fatalf("%s: type %s has its own encoding; teach the walker how to mutate it", name, typ)
	}
	with := func(s step) []step { return append(append([]step(nil), steps...), s) }
	leaf := func(m func(reflect.Value)) []leafPath { return []leafPath{{name: name, steps: steps, mutate: m}} }
	switch typ.Kind() {
	case reflect.String:
		return leaf(func(v reflect.Value) { v.SetString("mutated") })
	case reflect.Bool:
		return leaf(func(v reflect.Value) { v.SetBool(true) })
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return leaf(func(v reflect.Value) { v.SetInt(7) })
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return leaf(func(v reflect.Value) { v.SetUint(7) })
	case reflect.Float32, reflect.Float64:
		return leaf(func(v reflect.Value) { v.SetFloat(1.5) })
	case reflect.Pointer:
		return collectLeaves(t, typ.Elem(), name, with(func(v reflect.Value) reflect.Value {
			if v.IsNil() {
				v.Set(reflect.New(typ.Elem()))
			}
			return v.Elem()
		}), seen)
	case reflect.Slice:
		return collectLeaves(t, typ.Elem(), name+"[0]", with(func(v reflect.Value) reflect.Value {
			if v.Len() == 0 {
				v.Set(reflect.MakeSlice(typ, 1, 1))
			}
			return v.Index(0)
		}), seen)
	case reflect.Map:
		if typ.Key().Kind() != reflect.String || typ.Elem().Kind() != reflect.String {
			t.Fatalf("%s: map %s is not map[string]string; teach the walker how to mutate it", name, typ)
		}
		// Two leaves: adding an entry, and changing an entry's value.
		return []leafPath{
			{name: name + "{+k}", steps: steps, mutate: func(v reflect.Value) { setMapEntry(v, "k", "v") }},
			{name: name + "{k}", steps: with(func(v reflect.Value) reflect.Value { setMapEntry(v, "k", "old"); return v }),
				mutate: func(v reflect.Value) { setMapEntry(v, "k", "new") }},
		}
	case reflect.Struct:
		if seen[typ] {
			t.Fatalf("%s: recursive type %s; teach the walker to bound it", name, typ)
		}
		seen[typ] = true
		defer delete(seen, typ)
		var out []leafPath
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				// Such a field would never reach the hash.
				t.Fatalf("%s.%s is not encoded to JSON, so it cannot be part of the ID; a config holds only hashed data", name, f.Name)
			}
			child := name + "." + f.Name
			if f.Anonymous { // embedded fields are promoted in JSON, so name them as such
				child = name
			}
			out = append(out, collectLeaves(t, f.Type, child, with(func(v reflect.Value) reflect.Value { return v.Field(i) }), seen)...)
		}
		return out
	default:
		t.Fatalf("%s: kind %s cannot be mutated; teach the walker", name, typ.Kind())
		return nil
	}
}

func setMapEntry(m reflect.Value, k, v string) {
	if m.IsNil() {
		m.Set(reflect.MakeMap(m.Type()))
	}
	m.SetMapIndex(reflect.ValueOf(k).Convert(m.Type().Key()), reflect.ValueOf(v).Convert(m.Type().Elem()))
}

// TestEveryLeafChangesTheID is the guarantee upstream lacked: every leaf of Config
// (string, bool, number, slice element, map entry, nested struct, pointer) changes
// the ID, and DeepCopy shares nothing with the original.
func TestEveryLeafChangesTheID(t *testing.T) {
	leaves := collectLeaves(t, reflect.TypeFor[Config](), "Config", nil, map[reflect.Type]bool{})
	names := map[string]bool{}
	for _, leaf := range leaves {
		names[leaf.name] = true
		if leaf.name == "Config.ID" {
			continue
		}
		base := &Config{}
		leaf.reach(base) // allocates the path; the leaf itself stays zero
		baseID := base.ComputeID()

		changed := base.DeepCopy()
		leaf.mutate(leaf.reach(changed))
		if changed.ComputeID() == baseID {
			t.Errorf("%s: changing it does not change the ID", leaf.name)
		}
		if base.ComputeID() != baseID {
			t.Errorf("%s: DeepCopy shares it with the original", leaf.name)
		}
	}
	t.Logf("%d leaves checked", len(leaves))
	for _, want := range []string{
		"Config.ID", "Config.VirtHandlerImage", "Config.SidecarShimImage", "Config.AdditionalProperties{+k}",
		"Config.PassthroughEnvVars{k}", "Config.CustomizeComponents.Patches[0].Patch", "Config.CustomizeComponents.Flags.Handler{+k}",
		"Config.Infra.Replicas", "Config.Infra.NodePlacement.Tolerations[0].TolerationSeconds",
		"Config.Workloads.NodePlacement.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].Weight",
	} {
		if !names[want] {
			t.Errorf("walker did not reach %s; it reached: %s", want, strings.Join(sortedKeys(names), ", "))
		}
	}
}

func TestIDIgnoresTheIDField(t *testing.T) {
	cfg := &Config{Namespace: "ns"}
	before := cfg.ComputeID()
	cfg.ID = "anything"
	if cfg.ComputeID() != before {
		t.Fatal("the ID depends on the id field")
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
