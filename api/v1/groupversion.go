package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of every type in this package.
var GroupVersion = schema.GroupVersion{Group: "kubevirt.io", Version: "v1"}

var (
	// SchemeBuilder registers this package's types with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds this package's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&KubeVirt{}, &KubeVirtList{},
		&VirtualMachine{}, &VirtualMachineList{},
		&VirtualMachineInstance{}, &VirtualMachineInstanceList{},
		&VirtualMachineInstanceMigration{}, &VirtualMachineInstanceMigrationList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
