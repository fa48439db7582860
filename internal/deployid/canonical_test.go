package deployid

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func TestSortedJSON(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"flat":              {`{"b":1,"a":"x"}`, `{"a":"x","b":1}`},
		"nested":            {`{"z":{"y":[{"d":1,"c":2}],"x":null},"a":true}`, `{"a":true,"z":{"x":null,"y":[{"c":2,"d":1}]}}`},
		"arrays keep order": {`[3,{"b":0,"a":0},1]`, `[3,{"a":0,"b":0},1]`},
		"tricky strings":    {`{"k\"}":"v,]}","a":"\\"}`, `{"a":"\\","k\"}":"v,]}"}`},
		"empty":             {`{"a":{},"b":[]}`, `{"a":{},"b":[]}`},
		"scalar":            {`"x"`, `"x"`},
		"invalid UTF-8 escape becomes the literal": {`{"\ufffd":"\ufffd","b":"\\ufffd"}`, "{\"b\":\"\\\\ufffd\",\"\uFFFD\":\"\uFFFD\"}"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, _, err := sortedJSON([]byte(tt.in))
			if err != nil || string(got) != tt.want {
				t.Errorf("sortedJSON(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
			}
		})
	}
	for _, bad := range []string{``, `{`, `{"a"}`, `{"a":1,}`, `[1 2]`, `"open`, `{"a":1}x`, `{"a":}`} {
		if _, _, err := sortedJSON([]byte(bad)); err == nil {
			t.Errorf("sortedJSON(%q) accepted malformed JSON", bad)
		}
	}
}

// FuzzSortedJSON: never panics, and for valid JSON without duplicate keys the
// result means the same as the input.
func FuzzSortedJSON(f *testing.F) {
	f.Add(`{"b":[1,{"d":"}","c":null}],"a":{"x":"\""}}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, text string) {
		_, _, _ = sortedJSON([]byte(text)) // must not panic on anything
		var compact bytes.Buffer
		if json.Compact(&compact, []byte(text)) != nil {
			return
		}
		got, _, err := sortedJSON(compact.Bytes())
		if err != nil {
			t.Fatalf("sortedJSON rejected valid JSON %s: %v", compact.Bytes(), err)
		}
		var want, have any
		if json.Unmarshal(compact.Bytes(), &want) != nil {
			return
		}
		if err := json.Unmarshal(got, &have); err != nil || (!reflect.DeepEqual(want, have) && !hasDuplicateKeys(compact.Bytes())) {
			t.Fatalf("sortedJSON changed the meaning: %s -> %s", compact.Bytes(), got)
		}
	})
}

// hasDuplicateKeys reports whether some object repeats a key, where reordering may
// legitimately change which value a decoder keeps.
func hasDuplicateKeys(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		keys   map[string]bool
		object bool
		expect bool // next string token in this object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expect {
			if key, ok := tok.(string); ok {
				if top.keys[key] {
					return true
				}
				top.keys[key] = true
				top.expect = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, object: true, expect: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].expect = true
		}
	}
}
