package apply

import (
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// Objects every release's strategy holds but upstream's operator writes only
// when the CR asks for them: they are left out of the desired state otherwise,
// so a cluster that had them (the gate was on) sees them go as orphans.
const (
	// VirtLauncherPodMutator is written only with the ContainerPathVolumes gate.
	VirtLauncherPodMutator = "virt-launcher-pod-mutator"
	instancetypeGroup      = "instancetype.kubevirt.io"
)

// Enabled returns s (shallow) without the objects cfg switches off: the
// synchronization controller without DecentralizedLiveMigration, the export
// proxy (its Deployment, so its PodDisruptionBudget, and its Route) where the
// release's operator writes it only with a gate that is off
// (release.Release.ExportProxyGate: v1.8 without VMExport), the virt-launcher
// pod mutator without ContainerPathVolumes, and the cluster instancetypes and
// preferences when commonInstancetypesDeployment is off.
func Enabled(s *strategy.Strategy, cfg *deployid.Config) *strategy.Strategy {
	out := *s
	out.Deployments = without(s.Deployments, func(name string) bool {
		return (name == VirtSynchronizationController && !cfg.DecentralizedLiveMigrationEnabled()) ||
			(name == VirtExportProxy && !cfg.ExportProxyEnabled())
	})
	if !cfg.ExportProxyEnabled() {
		out.Routes = without(s.Routes, func(name string) bool { return name == VirtExportProxy })
	}
	if !cfg.ContainerPathVolumesEnabled() {
		out.MutatingWebhookConfigurations = without(s.MutatingWebhookConfigurations, func(name string) bool { return name == VirtLauncherPodMutator })
	}
	if !cfg.CommonInstancetypesEnabled() {
		out.Others = out.Others[:0:0]
		for _, o := range s.Others {
			if o.GroupVersionKind().Group != instancetypeGroup {
				out.Others = append(out.Others, o)
			}
		}
	}
	return &out
}

func without[T interface{ GetName() string }](objs []T, drop func(name string) bool) []T {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if !drop(o.GetName()) {
			out = append(out, o)
		}
	}
	return out
}
