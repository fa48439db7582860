package operator

import (
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// cacheTransform drops, before an object enters the cache, what the operator
// never reads: every object's managedFields (often the largest part of small
// objects), and a VMI's spec (the workload updater and the uninstall guard read
// only metadata and status; a VMI's spec holds its whole domain).
func cacheTransform() toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	return func(in any) (any, error) {
		out, err := strip(in)
		if err != nil {
			return out, err
		}
		if vmi, ok := out.(*v1.VirtualMachineInstance); ok {
			vmi.Spec = runtime.RawExtension{}
		}
		return out, nil
	}
}
