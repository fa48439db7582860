// Package manager embeds the cluster-wide objects of the operator's manifest that a
// sandbox needs besides RBAC, so `sandbox run` and the tests create exactly what
// `kubectl apply -k config/default` would.
package manager

import (
	_ "embed"
	"fmt"

	schedulingv1 "k8s.io/api/scheduling/v1"
	"sigs.k8s.io/yaml"
)

//go:embed priorityclass.yaml
var priorityClass []byte

// PriorityClass is kubevirt-cluster-critical, as priorityclass.yaml defines it.
func PriorityClass() (*schedulingv1.PriorityClass, error) {
	pc := &schedulingv1.PriorityClass{}
	if err := yaml.UnmarshalStrict(priorityClass, pc); err != nil {
		return nil, fmt.Errorf("config/manager/priorityclass.yaml: %w", err)
	}
	return pc, nil
}
