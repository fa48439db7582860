package workloadupdate

import (
	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Gate reports whether workload updates may act now: only when the KubeVirt CR is
// Deployed and the observed deployment is the target one. The reason says why not.
func Gate(kv *v1.KubeVirt) (ok bool, reason string) {
	switch {
	case kv == nil:
		return false, "no KubeVirt CR"
	case kv.DeletionTimestamp != nil:
		return false, "KubeVirt CR is being deleted"
	case kv.Status.Phase != v1.KubeVirtPhaseDeployed:
		return false, "KubeVirt is not Deployed (phase " + string(kv.Status.Phase) + ")"
	case kv.Status.ObservedDeploymentID != kv.Status.TargetDeploymentID:
		return false, "infrastructure is still updating (observed deployment " +
			kv.Status.ObservedDeploymentID + " != target " + kv.Status.TargetDeploymentID + ")"
	}
	return true, ""
}

// Methods are the allowed ways to move a VMI.
type Methods struct {
	LiveMigrate bool
	Evict       bool
}

// MethodsFrom reads the spec's method list; unknown values are ignored.
func MethodsFrom(list []v1.WorkloadUpdateMethod) Methods {
	var m Methods
	for _, x := range list {
		switch x {
		case v1.WorkloadUpdateMethodLiveMigrate:
			m.LiveMigrate = true
		case v1.WorkloadUpdateMethodEvict:
			m.Evict = true
		}
	}
	return m
}

// None reports whether no method is allowed (nothing is acted on; counts still are).
func (m Methods) None() bool { return !m.LiveMigrate && !m.Evict }
