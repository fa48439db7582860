package generate

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/utils/ptr"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// priorityClasses: kubevirt-cluster-critical, which every component's pods
// name. Without it the API server refuses the pods, so the strategy carries it
// rather than leaving it to the operator's own manifest.
func (b *builder) priorityClasses() {
	b.add(&schedulingv1.PriorityClass{
		ObjectMeta:       meta(priorityClassKubeVirtCritical, "", map[string]string{metadata.AppLabel: ""}),
		Value:            1_000_000_000,
		GlobalDefault:    false,
		PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority),
		Description:      "The priority of KubeVirt's control-plane components and virt-handler.",
	})
}
