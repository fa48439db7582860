package apply

import (
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// The bounds of what customizeComponents patches may make of a strategy, so
// that no patch can take the memory or the time of the operator, or of its
// webhook's dry run, which applies them too (Customize checks them).
//
// Memory: the API server bounds a patch of one object the same way
// (k8s.io/apiserver: maxJSONPatchOperations, JSONPatchMaxCopyBytes,
// MaxRequestBodyBytes). The operator holds every object of a strategy at once
// (v1.9.0 has 40 patchable ones, 42 KB together) and a wildcard applies a patch
// to each, so it also bounds what the patches add to all of them together.
// Merge and strategic patches copy nothing: what one adds to an object is at
// most its own size, which the same bounds cover.
//
// Time: a json patch's operation and a strategic patch's list element each may
// walk a whole list or object: inserting into a list copies it, and a
// strategic list is merged element by element into the object's list. So a
// 130 KB strategic patch of 8,000 containers took 8.5 s per object, and a
// 730 KB json patch of 10,000 insertions into a list of 100,000 took 17 s.
// Their work (steps) is bounded by counting, before anything is applied, each
// operation or list element as the longest list or object it may walk. Merge
// patches take time in proportion to their size and are not counted.
const (
	// MaxPatchesBytes is the most text all patches together may have. etcd
	// stores at most 1.5 MiB per object by default, the rest of the KubeVirt
	// included; a customization is a few KB. The webhook's callers are not
	// bound by etcd, and what a dry run decodes grows with the text.
	MaxPatchesBytes = 1 << 20
	// MaxJSONPatchOperations is the most operations one JSON patch may have.
	MaxJSONPatchOperations = 10000
	// MaxJSONPatchCopyBytes is the most a JSON patch's copy operations may
	// add to one object: each copy of a subtree into the object doubles it.
	MaxJSONPatchCopyBytes = 3 << 20
	// MaxPatchedObjectBytes is the most JSON a patched object may have: the
	// API server refuses a larger request body, so it could never be written.
	MaxPatchedObjectBytes = 3 << 20
	// MaxCustomizationGrowth is the most bytes all patches together may add to
	// the objects they apply to.
	MaxCustomizationGrowth = 3 << 20
	// MaxPatchSteps is the most work all patches together may take: about a
	// second for strategic patches, the costlier per step. A customization of
	// a hundred operations or list elements on every object takes under 1% of it.
	MaxPatchSteps = 10_000_000
)

// CheckPatchText refuses patches whose text together is over MaxPatchesBytes,
// as a *PatchError naming the first patch past it, before any is decoded:
// decoding takes many times the text.
func CheckPatchText(ps []v1.CustomizeComponentsPatch) error {
	text := 0
	for i, p := range ps {
		if text += len(p.Patch); text > MaxPatchesBytes {
			return &PatchError{Source: fmt.Sprintf("customizeComponents.patches[%d]", i), Patch: p,
				Err: fmt.Errorf("the patches up to this one have %d bytes, over the limit of %s", text, mib(MaxPatchesBytes))}
		}
	}
	return nil
}

// mib writes a limit in MiB, for messages.
func mib(n int) string { return fmt.Sprintf("%d MiB", n>>20) }

// budget is what the patches of one Customize have used of the limits on all
// of them together.
type budget struct {
	grown int // bytes added to the objects
	steps int
}

// spend adds one patch's application to the budget, or says which limit it
// would exceed.
func (b *budget) spend(steps, grown int) error {
	if b.steps+steps > MaxPatchSteps {
		return fmt.Errorf("the patches would take %d steps, over the limit of %d (a json patch's operations and a strategic patch's list elements, each counted as the longest list or object in the object or the patch)",
			b.steps+steps, MaxPatchSteps)
	}
	if b.grown+grown > MaxCustomizationGrowth {
		return fmt.Errorf("the patches would make the objects they apply to %d bytes larger together, over the limit of %s", b.grown+grown, mib(MaxCustomizationGrowth))
	}
	b.steps += steps
	b.grown += grown
	return nil
}

// patchSteps is the work of applying p to doc, in steps: a json patch's
// operations or a strategic patch's list elements, times the longest list or
// object that each may walk, which is in doc or in the patch. ops is p
// decoded, for a json patch.
func patchSteps(p v1.CustomizeComponentsPatch, ops jsonpatch.Patch, doc []byte) int {
	longest, _ := jsonShape(doc)
	switch p.Type {
	case v1.JSONPatchType:
		for _, op := range ops {
			if v := op["value"]; v != nil {
				l, _ := jsonShape(*v)
				longest = max(longest, l)
			}
		}
		return len(ops) * longest
	case v1.StrategicMergePatchType:
		l, elements := jsonShape([]byte(p.Patch))
		return elements * max(longest, l)
	}
	return 0
}

// jsonShape scans JSON text for what bounds the cost of patching it: the most
// members of any one array or object, and the elements of all arrays together.
// It reads valid JSON (its callers have decoded it) and allocates only its
// stack.
func jsonShape(raw json.RawMessage) (longest, elements int) {
	type open struct {
		array    bool
		commas   int
		nonEmpty bool
	}
	var stack []open
	inString, escaped := false, false
	for _, c := range raw {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r', ':':
			continue
		case ',':
			stack[len(stack)-1].commas++
			continue
		case ']', '}':
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			n := 0
			if top.nonEmpty {
				n = top.commas + 1
			}
			longest = max(longest, n)
			if top.array {
				elements += n
			}
			continue
		}
		if len(stack) > 0 {
			stack[len(stack)-1].nonEmpty = true
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			stack = append(stack, open{array: c == '['})
		}
	}
	return longest, elements
}
