package generate

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/virt-operator/virt-operator/internal/strategy"
)

// RenderYAML writes every object of s as multi-document YAML that `kubectl apply`
// accepts: CRDs first (so a later document may use them), then the rest in
// emission order; no status and no creationTimestamp.
func RenderYAML(s *strategy.Strategy) ([]byte, error) {
	objs := make([]client.Object, 0, len(s.Objects()))
	for _, c := range s.CRDs {
		objs = append(objs, c)
	}
	for _, o := range s.Objects() {
		if o.GetObjectKind().GroupVersionKind().Kind != "CustomResourceDefinition" {
			objs = append(objs, o)
		}
	}
	var out bytes.Buffer
	for _, o := range objs {
		doc, err := cleanObject(o)
		if err != nil {
			return nil, fmt.Errorf("rendering %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
		raw, err := yaml.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("rendering %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
		out.WriteString("---\n")
		out.Write(raw)
	}
	return out.Bytes(), nil
}

// cleanObject is o as a JSON-like map without the fields a manifest never sets.
func cleanObject(o client.Object) (map[string]any, error) {
	var m map[string]any
	if u, ok := o.(*unstructured.Unstructured); ok {
		m = runtime.DeepCopyJSON(u.Object)
	} else {
		var err error
		if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(o); err != nil {
			return nil, err
		}
	}
	delete(m, "status")
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(m, "spec", "template", "metadata", "creationTimestamp")
	return m, nil
}
