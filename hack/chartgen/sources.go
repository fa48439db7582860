package main

// The chart's inputs: config/'s kustomizations and the objects of the files
// they list, read as kustomize would (resources only), in order.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// readKustomization reads config/<dir>/kustomization.yaml and, in order, the
// objects of every resource it lists (a file, or a directory with a
// kustomization of its own). Only resources are supported: any other field
// (a namespace, a name prefix, a patch, an image) would change the objects, and
// the chart would then differ from what kustomize builds.
func readKustomization(configDir, dir string) ([]source, error) {
	return readKustomizationSeen(configDir, dir, map[string]bool{})
}

func readKustomizationSeen(configDir, dir string, seen map[string]bool) ([]source, error) {
	if seen[dir] {
		return nil, fmt.Errorf("config/%s: kustomization included twice", dir)
	}
	seen[dir] = true
	file := path.Join(dir, "kustomization.yaml")
	raw, err := os.ReadFile(filepath.Join(configDir, filepath.FromSlash(file)))
	if err != nil {
		return nil, err
	}
	var k struct {
		APIVersion string   `json:"apiVersion,omitempty"`
		Kind       string   `json:"kind,omitempty"`
		Resources  []string `json:"resources"`
	}
	if err := yaml.UnmarshalStrict(raw, &k); err != nil {
		return nil, fmt.Errorf("config/%s: chartgen reads resources only (a transformer would make the chart differ from kustomize's build): %w", file, err)
	}
	var out []source
	for _, r := range k.Resources {
		if strings.Contains(r, "://") || path.IsAbs(r) {
			return nil, fmt.Errorf("config/%s: resource %q: only relative paths are supported", file, r)
		}
		rel := path.Clean(path.Join(dir, r))
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return nil, fmt.Errorf("config/%s: resource %q is outside config/", file, r)
		}
		st, err := os.Stat(filepath.Join(configDir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("config/%s: %w", file, err)
		}
		if st.IsDir() {
			sub, err := readKustomizationSeen(configDir, rel, seen)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
			continue
		}
		objs, err := readObjects(filepath.Join(configDir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("config/%s: %w", rel, err)
		}
		out = append(out, source{path: rel, objects: objs})
	}
	return out, nil
}

// readObjects decodes every YAML document of a file, numbers kept as written.
func readObjects(file string) ([]map[string]any, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var out []map[string]any
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		if string(bytes.TrimSpace(j)) == "null" {
			continue // an empty document, or comments only
		}
		dec := json.NewDecoder(bytes.NewReader(j))
		dec.UseNumber()
		obj := map[string]any{}
		if err := dec.Decode(&obj); err != nil {
			return nil, err
		}
		if obj["kind"] == nil || obj["apiVersion"] == nil {
			return nil, errors.New("a document without apiVersion and kind")
		}
		out = append(out, obj)
	}
}

// namespaceOf is the name of the install's one Namespace.
func namespaceOf(srcs []source) (string, error) {
	var names []string
	for _, s := range srcs {
		for _, o := range s.objects {
			if o["kind"] == "Namespace" {
				names = append(names, str(meta(o)["name"]))
			}
		}
	}
	if len(names) != 1 {
		return "", fmt.Errorf("config/%s: Namespaces %v, want the operator's only", installBase, names)
	}
	return names[0], nil
}
