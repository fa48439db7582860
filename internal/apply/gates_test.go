package apply

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// As upstream's operator, the synchronization controller, the virt-launcher pod
// mutator and the cluster instancetypes are written only when the CR wants them.
func TestEnabled(t *testing.T) {
	s := testStrategy(t)
	s.MutatingWebhookConfigurations = []*admissionregistrationv1.MutatingWebhookConfiguration{
		{ObjectMeta: metav1.ObjectMeta{Name: "virt-api-mutator"}}, {ObjectMeta: metav1.ObjectMeta{Name: VirtLauncherPodMutator}},
	}
	it := &unstructured.Unstructured{}
	it.SetAPIVersion("instancetype.kubevirt.io/v1beta1")
	it.SetKind("VirtualMachineClusterInstancetype")
	it.SetName("u1.small")
	s.Others = append(s.Others, it)

	gates := func(on ...string) func(*v1.KubeVirtSpec) {
		return func(spec *v1.KubeVirtSpec) {
			spec.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{FeatureGates: on}
		}
	}
	deployments := len(s.Deployments)
	off := Enabled(s, testConfig(t, nil))
	for _, d := range off.Deployments {
		if d.Name == VirtSynchronizationController {
			t.Error("the synchronization controller without DecentralizedLiveMigration")
		}
	}
	if len(off.MutatingWebhookConfigurations) != 1 || len(off.Others) != 1 {
		t.Errorf("defaults: %d mutating webhooks, %d others", len(off.MutatingWebhookConfigurations), len(off.Others))
	}
	on := Enabled(s, testConfig(t, gates("DecentralizedLiveMigration", "ContainerPathVolumes")))
	if len(on.Deployments) != len(s.Deployments) || len(on.MutatingWebhookConfigurations) != 2 {
		t.Errorf("gates on: %d Deployments, %d mutating webhooks", len(on.Deployments), len(on.MutatingWebhookConfigurations))
	}
	disabled := false
	noInstancetypes := Enabled(s, testConfig(t, func(spec *v1.KubeVirtSpec) {
		spec.Configuration.CommonInstancetypesDeployment = &v1.CommonInstancetypesDeployment{Enabled: &disabled}
	}))
	if len(noInstancetypes.Others) != 0 {
		t.Errorf("commonInstancetypesDeployment off: %d others", len(noInstancetypes.Others))
	}
	if len(s.Deployments) != deployments || len(s.Others) != 1 || len(s.MutatingWebhookConfigurations) != 2 {
		t.Error("the input was modified")
	}
}
