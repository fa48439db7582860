package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// readCRDs parses every CustomResourceDefinition in DIR/*.yaml (several documents per
// file allowed). Documents of other kinds are an error: the directory is for CRDs.
func readCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			err := dec.Decode(crd)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("parsing %s: %w", f, err)
			}
			if crd.Kind == "" && crd.Name == "" {
				continue // empty document
			}
			if crd.Kind != "CustomResourceDefinition" {
				return nil, fmt.Errorf("%s: unexpected kind %q in CRD directory", f, crd.Kind)
			}
			crds = append(crds, crd)
		}
	}
	return crds, nil
}

// createCRDs creates the CRDs (an existing one is left as is: the cluster is new).
func createCRDs(ctx context.Context, c apiextensions.Interface, crds []*apiextensionsv1.CustomResourceDefinition) error {
	for _, crd := range crds {
		_, err := c.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
	}
	return nil
}

// crdsEstablished reports whether every named CRD has Established=True.
func crdsEstablished(ctx context.Context, c apiextensions.Interface, crds []*apiextensionsv1.CustomResourceDefinition) (bool, error) {
	for _, want := range crds {
		crd, err := c.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		established := false
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				established = true
			}
		}
		if !established {
			return false, nil
		}
	}
	return true, nil
}
