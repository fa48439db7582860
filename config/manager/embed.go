// Package manager embeds the cluster-wide objects of the operator's manifest that a
// sandbox needs besides RBAC, so `virt-sandbox run` and the tests create exactly what
// `kubectl apply -k config/default` would.
package manager

import (
	_ "embed"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"sigs.k8s.io/yaml"
)

//go:embed priorityclass.yaml
var priorityClass []byte

//go:embed deployment.yaml
var deployment []byte

//go:embed networkpolicy.yaml
var networkPolicy []byte

// Deployment is the operator's Deployment, as deployment.yaml defines it.
func Deployment() (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(deployment, d); err != nil {
		return nil, fmt.Errorf("config/manager/deployment.yaml: %w", err)
	}
	return d, nil
}

// PriorityClass is kubevirt-cluster-critical, as priorityclass.yaml defines it.
func PriorityClass() (*schedulingv1.PriorityClass, error) {
	pc := &schedulingv1.PriorityClass{}
	if err := yaml.UnmarshalStrict(priorityClass, pc); err != nil {
		return nil, fmt.Errorf("config/manager/priorityclass.yaml: %w", err)
	}
	return pc, nil
}

// NetworkPolicy is the operator pods' ingress policy, as networkpolicy.yaml defines it.
func NetworkPolicy() (*networkingv1.NetworkPolicy, error) {
	np := &networkingv1.NetworkPolicy{}
	if err := yaml.UnmarshalStrict(networkPolicy, np); err != nil {
		return nil, fmt.Errorf("config/manager/networkpolicy.yaml: %w", err)
	}
	return np, nil
}
