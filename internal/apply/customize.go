package apply

import (
	"crypto/sha1" //nolint:gosec // upstream's customizer identifier, not a security hash
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsjson "sigs.k8s.io/json"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// PatchError is a customization that cannot be applied: a customizeComponents
// patch (Source "customizeComponents.patches[i]") or flags for a component
// (Source "customizeComponents.flags.<component>"). The controller reports it
// (Degraded) and writes nothing: retrying cannot help until the spec changes.
type PatchError struct {
	Source string
	// Patch is the offending patch; zero for flags.
	Patch v1.CustomizeComponentsPatch
	// Object is the object it failed on; zero when the patch itself is malformed.
	Object ObjectRef
	Err    error
}

func (e *PatchError) Error() string {
	what := e.Source
	if e.Patch.Type != "" || e.Patch.ResourceType != "" {
		what = fmt.Sprintf("%s (type %s, resourceType %s, resourceName %s)", e.Source, e.Patch.Type, e.Patch.ResourceType, e.Patch.ResourceName)
	}
	if e.Object.Name == "" {
		return fmt.Sprintf("%s: %v", what, e.Err)
	}
	return fmt.Sprintf("%s does not apply to %s: %v", what, e.Object, e.Err)
}

func (e *PatchError) Unwrap() error { return e.Err }

// patchableKinds are the kinds customizeComponents patches may target (§4.5);
// every object of these kinds also gets the customizer-identifier annotation.
var patchableKinds = map[string]bool{
	"deployment": true, "daemonset": true, "service": true, "secret": true, "apiservice": true,
	"validatingwebhookconfiguration": true, "mutatingwebhookconfiguration": true,
}

// Customize returns a copy of s (see copyObject) with cfg's customizations applied, in this
// order, so that the most explicit one wins:
//  1. spec.infra placement and replicas on the infra Deployments, spec.workloads
//     placement on virt-handler;
//  2. spec.customizeComponents.flags as the command of virt-api, virt-controller
//     and virt-handler;
//  3. spec.customizeComponents.patches, in list order (not sorted by length, as
//     upstream does), each to every object whose kind and name match
//     (case-insensitive, "*" matches any);
//  4. the annotation kubevirt.io/customizer-identifier = CustomizerHash on every
//     object of a patchable kind.
//
// The input is never modified. The first failure is returned as a *PatchError,
// as is a patch over one of the limits (customize_limits.go), which bound the
// memory and time all patches together may take.
func Customize(s *strategy.Strategy, cfg *deployid.Config) (*strategy.Strategy, error) {
	cc := v1.CustomizeComponents{}
	if cfg.CustomizeComponents != nil {
		cc = *cfg.CustomizeComponents
	}
	if err := CheckPatchText(cc.Patches); err != nil {
		return nil, err
	}
	for i, p := range cc.Patches {
		if err := checkPatch(p); err != nil {
			return nil, &PatchError{Source: fmt.Sprintf("customizeComponents.patches[%d]", i), Patch: p, Err: err}
		}
	}
	id, err := CustomizerHash(cfg.CustomizeComponents)
	if err != nil {
		return nil, err
	}
	out := &strategy.Strategy{}
	spent := &budget{}
	for _, orig := range s.Objects() {
		obj := copyObject(orig) // a CRD is neither placed, flagged nor patched
		place(obj, cfg.Infra, cfg.Workloads)
		if err := setFlags(obj, cc.Flags); err != nil {
			return nil, err
		}
		kind := strings.ToLower(kindOf(obj))
		for i, p := range cc.Patches {
			if !patchableKinds[kind] || !matches(p, kind, obj.GetName()) {
				continue
			}
			if obj, err = patchObject(obj, p, spent); err != nil {
				return nil, &PatchError{Source: fmt.Sprintf("customizeComponents.patches[%d]", i), Patch: p, Object: RefOf(orig), Err: err}
			}
		}
		if patchableKinds[kind] {
			ann := obj.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[metadata.CustomizerIdentifierAnnotation] = id
			obj.SetAnnotations(ann)
		}
		if err := out.Add(obj); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CustomizerHash identifies a customizeComponents value as upstream's operator
// does (its getHash): the hex SHA-1 of the value's JSON, its patches stably
// sorted by the length of their patch document first (nil hashes as empty:
// sha1("{}"), bf21a9e8…). So both operators stamp the same
// kubevirt.io/customizer-identifier on the same customization, and neither
// sees the other's objects as customized otherwise. The value hashed is the
// deployment config's, which drops an empty flags block (deployid); upstream
// hashes `flags: {}` as written.
func CustomizerHash(cc *v1.CustomizeComponents) (string, error) {
	c := v1.CustomizeComponents{}
	if cc != nil {
		c = *cc.DeepCopy()
	}
	sort.SliceStable(c.Patches, func(i, j int) bool { return len(c.Patches[i].Patch) < len(c.Patches[j].Patch) })
	raw, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("hashing customizeComponents: %w", err)
	}
	sum := sha1.Sum(raw)
	return hex.EncodeToString(sum[:]), nil
}

func checkPatch(p v1.CustomizeComponentsPatch) error {
	switch p.Type {
	case v1.JSONPatchType:
		ops, err := jsonpatch.DecodePatch([]byte(p.Patch))
		if err == nil && len(ops) > MaxJSONPatchOperations {
			err = fmt.Errorf("the json patch has %d operations, over the limit of %d", len(ops), MaxJSONPatchOperations)
		}
		return err
	case v1.MergePatchType, v1.StrategicMergePatchType:
		if !json.Valid([]byte(p.Patch)) {
			return errors.New("the patch is not valid JSON")
		}
		return nil
	}
	return fmt.Errorf("unknown patch type %q (want json, merge or strategic)", p.Type)
}

func matches(p v1.CustomizeComponentsPatch, kind, name string) bool {
	return (p.ResourceType == "*" || strings.EqualFold(p.ResourceType, kind)) &&
		(p.ResourceName == "*" || strings.EqualFold(p.ResourceName, name))
}

// patchObject applies p to obj and decodes the result strictly into a new object
// of the same type, so a patch that names an unknown field fails instead of
// silently doing nothing. A patch may not change the object's kind or identity.
// What it costs is spent from b, and checked against the limits before the
// patch is applied (its steps) or the result decoded (its size).
func patchObject(obj client.Object, p v1.CustomizeComponentsPatch, b *budget) (client.Object, error) {
	doc, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var ops jsonpatch.Patch
	if p.Type == v1.JSONPatchType {
		if ops, err = jsonpatch.DecodePatch([]byte(p.Patch)); err != nil {
			return nil, err
		}
	}
	if err := b.spend(patchSteps(p, ops, doc), 0); err != nil {
		return nil, err
	}
	var patched []byte
	switch p.Type {
	case v1.JSONPatchType:
		opts := jsonpatch.NewApplyOptions()
		opts.AccumulatedCopySizeLimit = MaxJSONPatchCopyBytes
		patched, err = ops.ApplyWithOptions(doc, opts)
		var tooMuch *jsonpatch.AccumulatedCopySizeError
		if errors.As(err, &tooMuch) {
			return nil, fmt.Errorf("the json patch's copy operations add more than the limit of %s", mib(MaxJSONPatchCopyBytes))
		}
		if err != nil {
			return nil, err
		}
	case v1.MergePatchType:
		if patched, err = jsonpatch.MergePatch(doc, []byte(p.Patch)); err != nil {
			return nil, err
		}
	case v1.StrategicMergePatchType:
		if patched, err = strategicpatch.StrategicMergePatch(doc, []byte(p.Patch), newLike(obj)); err != nil {
			return nil, err
		}
	}
	if len(patched) > MaxPatchedObjectBytes {
		return nil, fmt.Errorf("the patched object has %d bytes of JSON, over the limit of %s", len(patched), mib(MaxPatchedObjectBytes))
	}
	if err := b.spend(0, len(patched)-len(doc)); err != nil {
		return nil, err
	}
	out := newLike(obj)
	strict, err := sigsjson.UnmarshalStrict(patched, out)
	if err != nil {
		return nil, fmt.Errorf("the patched object does not decode: %w", err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("the patched object does not decode: %w", errors.Join(strict...))
	}
	if RefOf(out) != RefOf(obj) || out.GetObjectKind().GroupVersionKind() != obj.GetObjectKind().GroupVersionKind() {
		return nil, errors.New("the patch changes the object's kind, name or namespace")
	}
	return out, nil
}
