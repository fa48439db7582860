package generate

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/virt-operator/virt-operator/internal/strategy"
)

// podSpecs are the pod specs of every Deployment and DaemonSet in s.
func podSpecs(s *strategy.Strategy) []*corev1.PodSpec {
	var out []*corev1.PodSpec
	for _, d := range s.Deployments {
		out = append(out, &d.Spec.Template.Spec)
	}
	for _, ds := range s.DaemonSets {
		out = append(out, &ds.Spec.Template.Spec)
	}
	return out
}

// addPullSecrets gives every component pod the config's image pull secrets.
func addPullSecrets(s *strategy.Strategy, secrets []corev1.LocalObjectReference) {
	if len(secrets) == 0 {
		return
	}
	for _, spec := range podSpecs(s) {
		spec.ImagePullSecrets = append([]corev1.LocalObjectReference(nil), secrets...)
	}
}

// addPassthroughEnv puts the operator's pass-through variables (KV_IO_EXTRA_ENV_*,
// prefix stripped) first in the environment of every component's main container,
// before the component's own variables, as upstream does. Upstream's order among
// them is Go's map order; ours is by name (env is sorted by the config).
func addPassthroughEnv(s *strategy.Strategy, env []corev1.EnvVar) {
	if len(env) == 0 {
		return
	}
	for _, spec := range podSpecs(s) {
		if len(spec.Containers) == 0 {
			continue
		}
		main := &spec.Containers[0]
		main.Env = append(append([]corev1.EnvVar(nil), env...), main.Env...)
	}
}

// aggregateLabelPrefix starts the labels that fold a ClusterRole into the default
// admin, edit and view roles.
const aggregateLabelPrefix = "rbac.authorization.k8s.io/aggregate-to-"

// optOutOfAggregation sets every aggregation label of every ClusterRole (the
// virt-template bundle's included) to "false": roleAggregationStrategy Manual.
func optOutOfAggregation(s *strategy.Strategy) {
	for _, cr := range s.ClusterRoles {
		for k := range cr.Labels {
			if strings.HasPrefix(k, aggregateLabelPrefix) {
				cr.Labels[k] = "false"
			}
		}
	}
}
