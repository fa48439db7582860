package admission

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/rollout"
	"github.com/virt-operator/virt-operator/internal/workloads"
)

// Verdict is an admission decision: allowed, or refused with a message that names
// the problem.
type Verdict struct {
	Allowed bool
	Message string
}

func allow() Verdict                         { return Verdict{Allowed: true} }
func refuse(format string, a ...any) Verdict { return Verdict{Message: fmt.Sprintf(format, a...)} }

// AlreadyCreated is upstream's message for a second KubeVirt CR.
const AlreadyCreated = "Kubevirt is already created"

// Create refuses a KubeVirt when one exists anywhere in the cluster already, and a
// spec the operator could never install.
func Create(kv *v1.KubeVirt, existing []v1.KubeVirt) Verdict {
	if len(existing) > 0 {
		return refuse("%s", AlreadyCreated)
	}
	return validSpec(&kv.Spec)
}

// Update checks the new spec, but only when it changed: writes of metadata (the
// operator's finalizer) must pass even if an old spec would not.
func Update(old, kv *v1.KubeVirt) Verdict {
	if equality.Semantic.DeepEqual(old.Spec, kv.Spec) {
		return allow()
	}
	return validSpec(&kv.Spec)
}

// Delete refuses to uninstall a deployed KubeVirt whose uninstallStrategy is
// BlockUninstallIfWorkloadsExist (also when unset: the default) while workloads
// exist: the deletion would take every VM with the CRDs.
func Delete(kv *v1.KubeVirt, counts workloads.Counts) Verdict {
	if kv.Spec.UninstallStrategy == v1.UninstallStrategyRemoveWorkloads || kv.Status.Phase != v1.KubeVirtPhaseDeployed {
		return allow()
	}
	if counts.Total() == 0 {
		return allow()
	}
	return refuse("Rejecting the uninstall request, since there are still %s present. Either delete all KubeVirt related workloads or change the uninstall strategy before uninstalling KubeVirt.", counts)
}

// validSpec finds what the operator would refuse to install, naming the field.
func validSpec(s *v1.KubeVirtSpec) Verdict {
	if s.Infra != nil && s.Infra.Replicas != nil && *s.Infra.Replicas == 0 {
		return refuse("spec.infra.replicas: must not be 0")
	}
	if d := s.Configuration.DeveloperConfiguration; d != nil {
		for _, g := range d.FeatureGates {
			if slices.Contains(d.DisabledFeatureGates, g) {
				return refuse("spec.configuration.developerConfiguration: feature gate %s is both enabled and disabled", g)
			}
		}
	}
	for i, p := range s.CustomizeComponents.Patches {
		if err := patchSyntax(p); err != nil {
			return refuse("spec.customizeComponents.patches[%d] (%s %s): %v", i, p.ResourceType, p.ResourceName, err)
		}
	}
	if _, err := certs.PolicyFrom(s.CertificateRotateStrategy); err != nil {
		return refuse("spec.certificateRotateStrategy: %v", err)
	}
	if _, err := rollout.PolicyFrom(s.HandlerRollout); err != nil {
		return refuse("spec.handlerRollout: %v", err)
	}
	return allow()
}

// patchSyntax checks that a patch is what its type says: a JSON patch is a list of
// operations, a merge or strategic patch an object.
func patchSyntax(p v1.CustomizeComponentsPatch) error {
	var doc any
	if err := json.Unmarshal([]byte(p.Patch), &doc); err != nil {
		return fmt.Errorf("the patch is not JSON: %w", err)
	}
	switch p.Type {
	case v1.JSONPatchType:
		ops, ok := doc.([]any)
		if !ok {
			return fmt.Errorf("a json patch must be a list of operations")
		}
		for j, op := range ops {
			m, ok := op.(map[string]any)
			if !ok || m["op"] == nil || m["path"] == nil {
				return fmt.Errorf("operation %d needs op and path", j)
			}
			if path, _ := m["path"].(string); !strings.HasPrefix(path, "/") {
				return fmt.Errorf("operation %d: path %q must start with /", j, path)
			}
		}
	case v1.MergePatchType, v1.StrategicMergePatchType:
		if _, ok := doc.(map[string]any); !ok {
			return fmt.Errorf("a %s patch must be an object", p.Type)
		}
	default:
		return fmt.Errorf("type %q is not json, merge or strategic", p.Type)
	}
	return nil
}
