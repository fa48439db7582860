package apply

import (
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// generationResource is the status.generations group and resource of the kinds
// whose metadata.generation the API server bumps on every spec change, so an
// out-of-band edit shows as a generation other than the one we recorded. The
// first six use upstream's strings (§4.6), quirks included (the CRD group carries
// its version; PDBs are filed under apps), so status stays comparable.
func generationResource(obj client.Object) (group, resource string, ok bool) {
	switch obj.(type) {
	case *apiextensionsv1.CustomResourceDefinition:
		return "apiextensions.k8s.io/v1", "customresourcedefinitions", true
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		return "admissionregistration.k8s.io", "mutatingwebhookconfigurations", true
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		return "admissionregistration.k8s.io", "validatingwebhookconfigurations", true
	case *policyv1.PodDisruptionBudget:
		return "apps", "poddisruptionbudgets", true
	case *appsv1.Deployment:
		return "apps", "deployments", true
	case *appsv1.DaemonSet:
		return "apps", "daemonsets", true
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		return "admissionregistration.k8s.io", "validatingadmissionpolicies", true
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		return "admissionregistration.k8s.io", "validatingadmissionpolicybindings", true
	case *monitoringv1.ServiceMonitor:
		return "monitoring.coreos.com", "servicemonitors", true
	case *monitoringv1.PrometheusRule:
		return "monitoring.coreos.com", "prometheusrules", true
	}
	return "", "", false
}

// lastGeneration is the generation recorded for obj, or -1 (always "changed")
// when there is none.
func lastGeneration(gens []v1.GenerationStatus, obj client.Object) int64 {
	group, resource, ok := generationResource(obj)
	if !ok {
		return -1
	}
	for _, g := range gens {
		if g.Group == group && g.Resource == resource && g.Namespace == obj.GetNamespace() && g.Name == obj.GetName() {
			return g.LastGeneration
		}
	}
	return -1
}

// generationOf is the status.generations entry for the typed object obj, now at
// generation, when obj is of a tracked kind.
func generationOf(obj client.Object, generation int64, hash string) (v1.GenerationStatus, bool) {
	group, resource, ok := generationResource(obj)
	if !ok {
		return v1.GenerationStatus{}, false
	}
	return v1.GenerationStatus{Group: group, Resource: resource, Namespace: obj.GetNamespace(), Name: obj.GetName(),
		LastGeneration: generation, Hash: hash}, true
}

// MergeGenerations returns current with each update replacing the entry of the
// same object in place, or appended. Neither input is modified.
func MergeGenerations(current, updates []v1.GenerationStatus) []v1.GenerationStatus {
	out := append([]v1.GenerationStatus(nil), current...)
	for _, u := range updates {
		found := false
		for i := range out {
			if out[i].Group == u.Group && out[i].Resource == u.Resource && out[i].Namespace == u.Namespace && out[i].Name == u.Name {
				out[i], found = u, true
				break
			}
		}
		if !found {
			out = append(out, u)
		}
	}
	return out
}

// ForgetGenerations drops the entries of deleted objects (e.g. orphans).
func ForgetGenerations(current []v1.GenerationStatus, deleted []client.Object) []v1.GenerationStatus {
	gone := map[v1.GenerationStatus]bool{}
	for _, d := range deleted {
		if g, ok := generationOf(d, 0, ""); ok {
			gone[g] = true
		}
	}
	var out []v1.GenerationStatus
	for _, g := range current {
		key := v1.GenerationStatus{Group: g.Group, Resource: g.Resource, Namespace: g.Namespace, Name: g.Name}
		if !gone[key] {
			out = append(out, g)
		}
	}
	return out
}
