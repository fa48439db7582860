package generate

import (
	"fmt"
	"strings"
	"sync"
	"weak"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/virt-operator/virt-operator/internal/release"
)

// ReleaseCRDs are the CRDs rel's strategy installs for every config (crds.yaml,
// with their schemas): what a sandbox needs to hold VMs before a KubeVirt install.
func ReleaseCRDs(rel *release.Release) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	objs, err := render(rel, "crds.yaml", &view{rel: rel})
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, o := range objs {
		if crd, ok := o.(*apiextensionsv1.CustomResourceDefinition); ok {
			out = append(out, crd)
		}
	}
	return out, attachSchemas(rel, out)
}

// attachSchemas gives every served version of each CRD that has none the schema
// generated for its kind from the release's kubevirt.io/api types (matched by the
// singular name, as upstream matches them). CRDs carrying their own schemas (the
// virt-template bundle's) are left as they are.
func attachSchemas(rel *release.Release, crds []*apiextensionsv1.CustomResourceDefinition) error {
	schemas, err := releaseSchemas(rel)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		for i := range crd.Spec.Versions {
			v := &crd.Spec.Versions[i]
			if v.Schema != nil {
				continue
			}
			s, ok := schemas.bySingular[crd.Spec.Names.Singular]
			if !ok {
				return fmt.Errorf("release %s: no schema for CRD %s", rel.Line, crd.Name)
			}
			v.Schema = s.DeepCopy()
		}
	}
	return nil
}

// schemaCache holds each release line's parsed schemas while a rendering
// uses them, weakly: the operator renders a release rarely (a new strategy's
// check, the webhook's dry run), and the parsed schemas take megabytes the
// rest of the time. Renderings at once share one parse.
var schemaCache sync.Map // release line → weak.Pointer[schemaSet]

type schemaSet struct {
	bySingular map[string]*apiextensionsv1.CustomResourceValidation
}

// releaseSchemas reads the release's generated CRDs: the schema of each
// kind's (only) version, with backticks in descriptions turned into quotes as
// upstream's generator turns them. The caller holds the returned set while
// it uses it.
func releaseSchemas(rel *release.Release) (*schemaSet, error) {
	if cached, ok := schemaCache.Load(rel.Line); ok {
		if set := cached.(weak.Pointer[schemaSet]).Value(); set != nil {
			return set, nil
		}
	}
	files, err := rel.Files("schemas")
	if err != nil {
		return nil, err
	}
	out := map[string]*apiextensionsv1.CustomResourceValidation{}
	for _, f := range files {
		raw, err := rel.File(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, crd); err != nil {
			return nil, fmt.Errorf("release %s %s: %w", rel.Line, f, err)
		}
		if len(crd.Spec.Versions) == 0 || crd.Spec.Versions[0].Schema == nil {
			return nil, fmt.Errorf("release %s %s: no schema", rel.Line, f)
		}
		s := crd.Spec.Versions[0].Schema
		sanitize(s.OpenAPIV3Schema)
		out[crd.Spec.Names.Singular] = s
	}
	set := &schemaSet{bySingular: out}
	schemaCache.Store(rel.Line, weak.Make(set))
	return set, nil
}

// sanitize replaces backticks in the descriptions of the schema, its properties
// and its items (upstream's walk; additionalProperties are not visited).
func sanitize(p *apiextensionsv1.JSONSchemaProps) {
	if p == nil {
		return
	}
	p.Description = strings.ReplaceAll(p.Description, "`", "'")
	for k, child := range p.Properties {
		sanitize(&child)
		p.Properties[k] = child
	}
	if p.Items != nil {
		sanitize(p.Items.Schema)
		for i := range p.Items.JSONSchemas {
			sanitize(&p.Items.JSONSchemas[i])
		}
	}
}
