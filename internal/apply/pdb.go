package apply

import (
	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// PDBSuffix is appended to a Deployment's name to name its PodDisruptionBudget.
const PDBSuffix = "-pdb"

// PodDisruptionBudgets returns, for each Deployment with 2 or more replicas, a
// PodDisruptionBudget "<name>-pdb" in its namespace keeping at least 1 pod
// available, selecting the Deployment's pods. It carries the Deployment's
// labels (with kubevirt.io = its own name, as upstream) and install-strategy
// annotations, so a PDB derived from a desired Deployment is itself desired.
// With fewer replicas an eviction could never proceed, so there is no PDB; a
// live one becomes an orphan.
func PodDisruptionBudgets(deployments []*appsv1.Deployment) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, d := range deployments {
		if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
			continue
		}
		name := d.Name + PDBSuffix
		labels := map[string]string{}
		for k, v := range d.Labels {
			labels[k] = v
		}
		labels[metadata.AppLabel] = name
		var annotations map[string]string
		for _, k := range []string{metadata.InstallStrategyVersionAnnotation, metadata.InstallStrategyRegistryAnnotation, metadata.InstallStrategyIdentifierAnnotation} {
			if v, ok := d.Annotations[k]; ok {
				if annotations == nil {
					annotations = map[string]string{}
				}
				annotations[k] = v
			}
		}
		minAvailable := intstr.FromInt32(1)
		out = append(out, &policyv1.PodDisruptionBudget{
			TypeMeta:   metav1.TypeMeta{APIVersion: policyv1.SchemeGroupVersion.String(), Kind: "PodDisruptionBudget"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.Namespace, Labels: labels, Annotations: annotations},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MinAvailable: &minAvailable,
				Selector:     d.Spec.Selector.DeepCopy(),
			},
		})
	}
	return out
}
