package apply

import (
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func TestJSONShape(t *testing.T) {
	for _, tc := range []struct {
		raw               string
		longest, elements int
	}{
		{`1`, 0, 0},
		{`"[1,2,3]"`, 0, 0},
		{`[]`, 0, 0},
		{`{}`, 0, 0},
		{`[1]`, 1, 1},
		{`[1, 2, 3]`, 3, 3},
		{`{"a": 1, "b": [1, 2], "c": {}}`, 3, 2},
		{`[[1, 2], [3, 4, 5, 6], []]`, 4, 9},
		{`{"a,b": "[,,,{", "c": "\"]", "d": ["\\", ","]}`, 3, 2},
		{` [ {"a":[ ]} , { } ] `, 2, 2},
	} {
		longest, elements := jsonShape([]byte(tc.raw))
		if longest != tc.longest || elements != tc.elements {
			t.Errorf("jsonShape(%s) = %d, %d; want %d, %d", tc.raw, longest, elements, tc.longest, tc.elements)
		}
	}
}

func TestPatchSteps(t *testing.T) {
	doc := []byte(`{"spec":{"containers":[{"name":"a"},{"name":"b"}],"args":["1","2","3"]}}`)
	ops := func(raw string) jsonpatch.Patch {
		p, err := jsonpatch.DecodePatch([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name  string
		patch v1.CustomizeComponentsPatch
		want  int
	}{
		{"json: operations times the document's longest list", v1.CustomizeComponentsPatch{Type: v1.JSONPatchType,
			Patch: `[{"op":"remove","path":"/spec/args/0"},{"op":"remove","path":"/spec/args/0"}]`}, 2 * 3},
		{"json: a longer list in a value", v1.CustomizeComponentsPatch{Type: v1.JSONPatchType,
			Patch: `[{"op":"add","path":"/spec/x","value":[1,2,3,4,5]},{"op":"add","path":"/spec/x/0","value":0}]`}, 2 * 5},
		{"strategic: list elements times the longest list", v1.CustomizeComponentsPatch{Type: v1.StrategicMergePatchType,
			Patch: `{"spec":{"containers":[{"name":"c","env":[{"name":"A"},{"name":"B"},{"name":"C"},{"name":"D"}]}]}}`}, 5 * 4},
		{"merge: not counted", v1.CustomizeComponentsPatch{Type: v1.MergePatchType, Patch: `{"spec":{"args":[1,2,3,4,5,6,7,8]}}`}, 0},
	} {
		var o jsonpatch.Patch
		if tc.patch.Type == v1.JSONPatchType {
			o = ops(tc.patch.Patch)
		}
		if got := patchSteps(tc.patch, o, doc); got != tc.want {
			t.Errorf("%s: %d steps, want %d", tc.name, got, tc.want)
		}
	}
}
