package deployid

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
)

// ChangedKeys lists, sorted, the config keys whose values differ between old and
// new, as dotted JSON paths one level into objects: "virtHandlerImage",
// "additionalProperties.ImagePullPolicy", "customizeComponents.patches",
// "infra.nodePlacement". The id is never listed. A nil config counts as empty, so
// ChangedKeys(nil, cfg) lists everything cfg sets. It is meant for the Event that
// tells users why a rollout starts.
func ChangedKeys(old, new *Config) []string {
	a, b := genericObject(old), genericObject(new)
	var out []string
	for _, key := range unionKeys(a, b) {
		av, bv := a[key], b[key]
		ao, aIsObj := av.(map[string]any)
		bo, bIsObj := bv.(map[string]any)
		if (aIsObj || av == nil) && (bIsObj || bv == nil) {
			for _, sub := range unionKeys(ao, bo) {
				if !reflect.DeepEqual(ao[sub], bo[sub]) {
					out = append(out, key+"."+sub)
				}
			}
			continue
		}
		if !reflect.DeepEqual(av, bv) {
			out = append(out, key)
		}
	}
	sort.Strings(out)
	return out
}

// genericObject is the canonical form of cfg (without id) as nested maps.
func genericObject(cfg *Config) map[string]any {
	if cfg == nil {
		return nil
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(cfg.CanonicalJSON()))
	dec.UseNumber()
	_ = dec.Decode(&m) // canonical JSON of a Config always decodes into an object
	return m
}

func unionKeys(a, b map[string]any) []string {
	seen := make(map[string]struct{}, len(a)+len(b))
	for k := range a {
		seen[k] = struct{}{}
	}
	for k := range b {
		seen[k] = struct{}{}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
