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

// PodDisruptionBudgets returns upstream's PodDisruptionBudget for each
// Deployment (its components.NewPodDisruptionBudgetForDeployment and the
// operator's metadata): "<name>-pdb" in its namespace, selecting the
// Deployment's pods, keeping all of them but one available (minAvailable
// replicas-1), so at most one is evicted at a time. A Deployment of fewer than
// 2 replicas (or none set) has none: no eviction could proceed; a live one
// becomes an orphan.
//
// Its labels are upstream's: kubevirt.io = its own name and, from the
// Deployment (stamped by Desired), the operator's (managed-by, component, and
// part-of and version only as the product fields set them), not the
// Deployment's app.kubernetes.io/name or release version. It carries the
// Deployment's install-strategy annotations, so a PDB derived from a desired
// Deployment is itself desired.
func PodDisruptionBudgets(deployments []*appsv1.Deployment) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, d := range deployments {
		if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
			continue
		}
		name := d.Name + PDBSuffix
		var annotations map[string]string
		for _, k := range []string{metadata.InstallStrategyVersionAnnotation, metadata.InstallStrategyRegistryAnnotation, metadata.InstallStrategyIdentifierAnnotation} {
			if v, ok := d.Annotations[k]; ok {
				if annotations == nil {
					annotations = map[string]string{}
				}
				annotations[k] = v
			}
		}
		minAvailable := intstr.FromInt32(*d.Spec.Replicas - 1)
		out = append(out, &policyv1.PodDisruptionBudget{
			TypeMeta:   metav1.TypeMeta{APIVersion: policyv1.SchemeGroupVersion.String(), Kind: "PodDisruptionBudget"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: d.Namespace, Labels: pdbLabels(d, name), Annotations: annotations},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MinAvailable: &minAvailable,
				Selector:     d.Spec.Selector.DeepCopy(),
			},
		})
	}
	return out
}

// pdbLabels are the labels upstream gives d's PodDisruptionBudget: its name
// under kubevirt.io, and what metadata.Inject stamped on d. The version label
// is the product version only: d carries the release's version otherwise,
// recorded in its install-strategy-version annotation as well (a product
// version equal to the release's cannot be told from none, and is left out).
func pdbLabels(d *appsv1.Deployment, name string) map[string]string {
	labels := map[string]string{metadata.AppLabel: name}
	for _, k := range []string{metadata.ManagedByLabel, metadata.AppComponentLabel, metadata.AppPartOfLabel} {
		if v, ok := d.Labels[k]; ok {
			labels[k] = v
		}
	}
	if v, ok := d.Labels[metadata.AppVersionLabel]; ok && v != d.Annotations[metadata.InstallStrategyVersionAnnotation] {
		labels[metadata.AppVersionLabel] = v
	}
	return labels
}
