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
// synchronization controller without DecentralizedLiveMigration, the
// virt-launcher pod mutator without ContainerPathVolumes, and the cluster
// instancetypes and preferences when commonInstancetypesDeployment is off.
func Enabled(s *strategy.Strategy, cfg *deployid.Config) *strategy.Strategy {
	out := *s
	if !cfg.DecentralizedLiveMigrationEnabled() {
		out.Deployments = without(s.Deployments, func(name string) bool { return name == VirtSynchronizationController })
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
