package deployid

import (
	"slices"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/release"
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

// featureGateProperties derives the presence keys of §2.5 (plus the two gates that
// add or remove components in our operator, and the export proxy's gate where the
// release's operator has one) by the gate rules of the target release: v1.8 counts
// only listed gates, v1.9 turns Beta gates on unless they are disabled. Gates that
// only change component behaviour are read live by the components and stay out of
// the ID.
func featureGateProperties(c *v1.KubeVirtConfiguration, rules *release.Release) map[string]string {
	var enabled, disabled []string
	if d := c.DeveloperConfiguration; d != nil {
		enabled, disabled = d.FeatureGates, d.DisabledFeatureGates
	}
	on := func(gate string) bool { return rules.GateEnabled(gate, enabled, disabled) }
	out := map[string]string{KeyHypervisorName: defaultHypervisor}
	set := func(key string, value bool) {
		if value {
			out[key] = flagOn
		}
	}
	// persistentReservationConfiguration wins; without it the legacy gate, listed, counts.
	if pr := c.PersistentReservationConfiguration; pr != nil && pr.Enabled != nil {
		set(KeyPersistentReservationEnabled, *pr.Enabled)
	} else {
		set(KeyPersistentReservationEnabled, slices.Contains(enabled, GatePersistentReservation))
	}
	templateWanted := c.VirtTemplateDeployment == nil || c.VirtTemplateDeployment.Enabled == nil || *c.VirtTemplateDeployment.Enabled
	set(KeyVirtTemplateDeploymentEnabled, on(GateTemplate) && templateWanted)
	set(KeyExternalNetResourceInjection, on(GateExternalNetResourceInject))
	set(KeyVMStatsCollectorEnabled, on(GateVMStatsCollector))
	set(KeyPluginsEnabled, on(GatePlugins))
	manual := c.RoleAggregationStrategy != nil && *c.RoleAggregationStrategy == RoleAggregationManual
	set(KeyOptOutRoleAggregation, on(GateOptOutRoleAggregation) && manual)
	set(KeyDecentralizedLiveMigrationEnabled, on(GateDecentralizedLiveMigration))
	set(KeyContainerPathVolumesEnabled, on(GateContainerPathVolumes))
	ci := c.CommonInstancetypesDeployment
	set(KeyCommonInstancetypesDisabled, ci != nil && ci.Enabled != nil && !*ci.Enabled)
	if gate := rules.ExportProxyGate; gate != "" {
		set(KeyExportProxyDisabled, !on(gate))
	}
	return out
}
