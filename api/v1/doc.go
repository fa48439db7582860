// Package v1 holds the kubevirt.io/v1 API types virt-operator reads and writes:
// the KubeVirt custom resource it reconciles, and the VirtualMachine,
// VirtualMachineInstance and VirtualMachineInstanceMigration types its
// workload updater and uninstall logic need.
//
// The JSON field names match upstream KubeVirt for every field declared here,
// so a KubeVirt CR written for upstream is read the same way. Types whose
// upstream schema is far larger than what the operator needs (the VM, VMI and
// migration specs, spec.configuration) preserve unknown fields in their CRDs.
//
// +kubebuilder:object:generate=true
// +groupName=kubevirt.io
package v1
