package deployid

import (
	"bytes"
	"encoding/json"
	"sort"
	"testing"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

type pair struct{ k, v string }

// distinctPairs keeps the first value of each key: with duplicates, insertion order
// would legitimately decide the value.
func distinctPairs(kv ...string) []pair {
	seen := map[string]bool{}
	var out []pair
	for i := 0; i+1 < len(kv); i += 2 {
		if !seen[kv[i]] {
			seen[kv[i]] = true
			out = append(out, pair{kv[i], kv[i+1]})
		}
	}
	return out
}

func mapInOrder(pairs []pair, reverse bool) map[string]string {
	m := make(map[string]string, len(pairs))
	for i := range pairs {
		p := pairs[i]
		if reverse {
			p = pairs[len(pairs)-1-i]
		}
		m[p.k] = p.v
	}
	return m
}

func configFromPairs(pairs []pair, reverse bool) *Config {
	return &Config{
		Namespace:            "kubevirt",
		AdditionalProperties: mapInOrder(pairs, reverse),
		PassthroughEnvVars:   mapInOrder(pairs, reverse),
		CustomizeComponents:  &v1.CustomizeComponents{Flags: &v1.Flags{Handler: mapInOrder(pairs, reverse)}},
		Infra:                &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{NodeSelector: mapInOrder(pairs, reverse)}},
	}
}

// reorderedJSON writes v with the keys of every object in reverse order, to check
// that the order of keys in a parsed config never matters.
func reorderedJSON(t *testing.T, v any) []byte {
	var buf bytes.Buffer
	var write func(any)
	write = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Sort(sort.Reverse(sort.StringSlice(keys)))
			buf.WriteByte('{')
			for i, k := range keys {
				if i > 0 {
					buf.WriteByte(',')
				}
				write(k)
				buf.WriteByte(':')
				write(x[k])
			}
			buf.WriteByte('}')
		case []any:
			buf.WriteByte('[')
			for i, e := range x {
				if i > 0 {
					buf.WriteByte(',')
				}
				write(e)
			}
			buf.WriteByte(']')
		default:
			raw, err := json.Marshal(x)
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(raw)
		}
	}
	write(v)
	return buf.Bytes()
}

// FuzzIDMapOrder: the same config gives the same ID whatever the map insertion
// order, the JSON key order, and whether optional additionalProperties are "" or
// absent.
func FuzzIDMapOrder(f *testing.F) {
	f.Add("a", "1", "b", "2", "c", "3")
	f.Add("ImagePullPolicy", "Always", "", "", "z", "=a=b")
	f.Add("k", "", "K", "v", "\u00e9", "<&>")
	f.Fuzz(func(t *testing.T, k1, v1s, k2, v2s, k3, v3s string) {
		pairs := distinctPairs(k1, v1s, k2, v2s, k3, v3s)
		forward, backward := configFromPairs(pairs, false), configFromPairs(pairs, true)
		id := forward.ComputeID()
		if backward.ComputeID() != id {
			t.Fatalf("insertion order changed the ID: %v", pairs)
		}

		withEmpty := forward.DeepCopy()
		if _, taken := withEmpty.AdditionalProperties["optional"]; !taken {
			withEmpty.AdditionalProperties["optional"] = ""
			if withEmpty.ComputeID() != id {
				t.Fatal(`an additionalProperties entry "" changed the ID`)
			}
		}

		forward.ID = id
		var generic any
		if err := json.Unmarshal([]byte(forward.JSON()), &generic); err != nil {
			t.Fatalf("JSON() is not JSON: %v", err)
		}
		parsed, err := Parse(string(reorderedJSON(t, generic)))
		if err != nil {
			// Only Validate may object, e.g. to a fuzzed ImagePullPolicy.
			if forward.Validate() == nil {
				t.Fatalf("Parse of reordered JSON: %v", err)
			}
			return
		}
		if parsed.ID != id || parsed.ComputeID() != id {
			t.Fatal("reordered JSON parsed to a different ID")
		}
	})
}

// FuzzParse: Parse never panics, and whatever it accepts round-trips.
func FuzzParse(f *testing.F) {
	f.Add(`{"id":"x"}`)
	f.Add(`{"namespace":"kubevirt","additionalProperties":{"a":"b"}}`)
	f.Fuzz(func(t *testing.T, text string) {
		cfg, err := Parse(text)
		if err != nil {
			return
		}
		again, err := Parse(cfg.JSON())
		if err != nil || again.ID != cfg.ID {
			t.Fatalf("accepted config does not round-trip: %v", err)
		}
	})
}
