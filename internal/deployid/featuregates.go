package deployid

import (
	"slices"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Feature gates whose state changes which objects the operator creates.
const (
	GatePersistentReservation      = "PersistentReservation"
	GateTemplate                   = "Template"
	GateExternalNetResourceInject  = "ExternalNetResourceInjection"
	GateVMStatsCollector           = "VMStatsCollector"
	GatePlugins                    = "Plugins"
	GateOptOutRoleAggregation      = "OptOutRoleAggregation"
	GateDecentralizedLiveMigration = "DecentralizedLiveMigration"
	GateContainerPathVolumes       = "ContainerPathVolumes"
)

// RoleAggregationManual opts KubeVirt's ClusterRoles out of aggregation (with the gate).
const RoleAggregationManual v1.RoleAggregationStrategy = "Manual"

// defaultHypervisor is the only hypervisor our API can select; upstream always
// writes the key, so we do too.
const defaultHypervisor = "kvm"

// featureGates answers "is this gate on" as upstream does: a gate listed in
// disabledFeatureGates is off; one listed in featureGates is on; otherwise a Beta
// gate is on and an Alpha gate off.
type featureGates struct {
	enabled, disabled []string
}

func gatesOf(c *v1.KubeVirtConfiguration) featureGates {
	if c.DeveloperConfiguration == nil {
		return featureGates{}
	}
	return featureGates{enabled: c.DeveloperConfiguration.FeatureGates, disabled: c.DeveloperConfiguration.DisabledFeatureGates}
}

func (g featureGates) alpha(name string) bool {
	return !slices.Contains(g.disabled, name) && slices.Contains(g.enabled, name)
}

func (g featureGates) beta(name string) bool {
	return !slices.Contains(g.disabled, name)
}

// featureGateProperties derives the presence keys of §2.5 (plus the two gates that
// add or remove components in our operator). Gates that only change component
// behaviour are read live by the components and stay out of the ID.
func featureGateProperties(c *v1.KubeVirtConfiguration) map[string]string {
	g := gatesOf(c)
	out := map[string]string{KeyHypervisorName: defaultHypervisor}
	set := func(key string, on bool) {
		if on {
			out[key] = flagOn
		}
	}
	// Our API has no persistentReservationConfiguration, so only the legacy gate counts.
	set(KeyPersistentReservationEnabled, g.alpha(GatePersistentReservation))
	templateWanted := c.VirtTemplateDeployment == nil || c.VirtTemplateDeployment.Enabled == nil || *c.VirtTemplateDeployment.Enabled
	set(KeyVirtTemplateDeploymentEnabled, g.beta(GateTemplate) && templateWanted)
	set(KeyExternalNetResourceInjection, g.beta(GateExternalNetResourceInject))
	set(KeyVMStatsCollectorEnabled, g.alpha(GateVMStatsCollector))
	set(KeyPluginsEnabled, g.alpha(GatePlugins))
	manual := c.RoleAggregationStrategy != nil && *c.RoleAggregationStrategy == RoleAggregationManual
	set(KeyOptOutRoleAggregation, g.beta(GateOptOutRoleAggregation) && manual)
	set(KeyDecentralizedLiveMigrationEnabled, g.beta(GateDecentralizedLiveMigration))
	set(KeyContainerPathVolumesEnabled, g.alpha(GateContainerPathVolumes))
	return out
}
