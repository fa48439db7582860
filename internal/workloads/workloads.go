// Package workloads counts what KubeVirt runs for its users, cluster-wide: the
// VirtualMachineInstances, VirtualMachines, VirtualMachineInstanceReplicaSets and
// VirtualMachinePools whose objects an uninstall would delete with the CRDs. The
// uninstall guard counts them twice with it: at admission, where a delete of the
// KubeVirt CR is refused, and in the controller, for a delete that got past it.
package workloads

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstances;virtualmachines;virtualmachineinstancereplicasets,verbs=list
// +kubebuilder:rbac:groups=pool.kubevirt.io,resources=virtualmachinepools,verbs=list

// Kind is one kind of workload, with the name a message gives it.
type Kind struct {
	GVK    schema.GroupVersionKind
	Plural string // "VirtualMachineInstances"
}

// Kinds are the workload kinds, in the order upstream checks them (pools added).
var Kinds = []Kind{
	{schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstance"}, "VirtualMachineInstances"},
	{schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachine"}, "VirtualMachines"},
	{schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstanceReplicaSet"}, "VirtualMachineInstanceReplicaSets"},
	{schema.GroupVersionKind{Group: "pool.kubevirt.io", Version: "v1beta1", Kind: "VirtualMachinePool"}, "VirtualMachinePools"},
}

// Counts holds how many objects of each kind exist, in Kinds order.
type Counts []int

// Total is the number of workloads of every kind.
func (c Counts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// String names the kinds present with their counts: "3 VirtualMachineInstances,
// 1 VirtualMachines"; "" when there is none.
func (c Counts) String() string {
	var parts []string
	for i, v := range c {
		if v > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", v, Kinds[i].Plural))
		}
	}
	return strings.Join(parts, ", ")
}

// Count counts every workload kind cluster-wide with one metadata-only list of at
// most one item per kind (the API server reports how many more there are), so the
// cost does not grow with the number of VMs. A kind whose CRD is gone counts 0,
// whether the client's REST mapping knows it is gone (no match) or not yet (the
// API server answers 404, as it does all through an uninstall's CRD deletion).
func Count(ctx context.Context, r client.Reader) (Counts, error) {
	out := make(Counts, len(Kinds))
	for i, k := range Kinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(k.GVK.GroupVersion().WithKind(k.GVK.Kind + "List"))
		err := r.List(ctx, list, client.Limit(1))
		switch {
		case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("counting %s: %w", k.Plural, err)
		}
		out[i] = len(list.Items)
		if rest := list.GetRemainingItemCount(); rest != nil {
			out[i] += int(*rest)
		}
	}
	return out, nil
}
