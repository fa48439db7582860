package operator

import (
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// cacheTransform drops, before an object enters the cache, what the operator
// never reads: every object's managedFields (often the largest part of small
// objects); of a pod all but its node and its containers' names and images
// (virt-handler's pods, one per node, are read for the canary, the pre-pull
// pods for their pulls); of a node its image list and volumes (the canary and
// the pre-pull read its labels, conditions, taints and schedulability). VMIs
// and migrations are not in this cache at all: package workloadcache keeps
// them in compact forms of their own.
func cacheTransform() toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	return func(in any) (any, error) {
		out, err := strip(in)
		if err != nil {
			return out, err
		}
		switch o := out.(type) {
		case *corev1.Pod:
			o.Spec = corev1.PodSpec{NodeName: o.Spec.NodeName, Containers: namesAndImages(o.Spec.Containers),
				InitContainers: namesAndImages(o.Spec.InitContainers)}
		case *corev1.Node:
			o.Status.Images, o.Status.VolumesInUse, o.Status.VolumesAttached = nil, nil, nil
		}
		return out, nil
	}
}

func namesAndImages(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image}
	}
	return out
}
