// Package crd embeds the CustomResourceDefinitions controller-gen generates from
// api/v1 (bases/*.yaml), so the operator installs exactly the schemas of its own
// types without reading files at run time.
package crd

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

//go:embed bases/*.yaml
var bases embed.FS

// decoded parses the embedded files once; CRDs hands out copies.
var decoded = sync.OnceValues(func() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return decode(bases)
})

// CRDs returns every embedded CRD, sorted by name. Each call returns fresh copies
// the caller may modify.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	crds, err := decoded()
	if err != nil {
		return nil, err
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, len(crds))
	for i, c := range crds {
		out[i] = c.DeepCopy()
	}
	return out, nil
}

// Get returns a copy of the embedded CRD with the given name
// (<plural>.<group>), or an error naming it if there is none.
func Get(name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	crds, err := decoded()
	if err != nil {
		return nil, err
	}
	for _, c := range crds {
		if c.Name == name {
			return c.DeepCopy(), nil
		}
	}
	return nil, fmt.Errorf("no embedded CRD %s", name)
}

func decode(fsys fs.FS) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(fsys, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			c := &apiextensionsv1.CustomResourceDefinition{}
			err := dec.Decode(c)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("embedded %s: %w", f, err)
			}
			if c.Kind == "" && c.Name == "" {
				continue // empty document
			}
			if c.Kind != "CustomResourceDefinition" || c.Name == "" {
				return nil, fmt.Errorf("embedded %s: a %q named %q is not a CRD", f, c.Kind, c.Name)
			}
			crds = append(crds, c)
		}
	}
	sort.Slice(crds, func(i, j int) bool { return crds[i].Name < crds[j].Name })
	return crds, nil
}
