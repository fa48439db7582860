package apply

import (
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/strategy"
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

// As the release's own operator, v1.8 writes virt-exportproxy (Deployment, so
// PodDisruptionBudget, and Route) only with VMExport listed; v1.9 always.
func TestEnabledExportProxy(t *testing.T) {
	s := testStrategy(t)
	route := &unstructured.Unstructured{}
	route.SetAPIVersion("route.openshift.io/v1")
	route.SetKind(strategy.KindRoute)
	route.SetName(VirtExportProxy)
	s.Routes = append(s.Routes, route)
	s.Deployments[2].Spec.Replicas = ptr.To(int32(2)) // virt-exportproxy, as released
	for _, tt := range []struct {
		tag   string
		gates []string
		want  bool
	}{
		{"v1.9.0", nil, true}, {"v1.8.4", nil, false}, {"v1.8.4", []string{"VMExport"}, true},
	} {
		out := Enabled(s, testConfig(t, func(spec *v1.KubeVirtSpec) {
			spec.ImageTag = tt.tag
			spec.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{FeatureGates: tt.gates}
		}))
		var refs []ObjectRef
		for _, st := range Steps(out, Install) {
			for _, o := range st.Objects {
				refs = append(refs, RefOf(o))
			}
		}
		for _, ref := range []ObjectRef{{Kind: "Deployment", Namespace: ns, Name: VirtExportProxy},
			{Kind: "PodDisruptionBudget", Namespace: ns, Name: VirtExportProxy + PDBSuffix}} {
			if got := slices.Contains(refs, ref); got != tt.want {
				t.Errorf("%s with gates %v: %s written %v, want %v", tt.tag, tt.gates, ref, got, tt.want)
			}
		}
		if got := len(out.Routes) == 1; got != tt.want {
			t.Errorf("%s with gates %v: the Route written %v, want %v", tt.tag, tt.gates, got, tt.want)
		}
	}
	if len(s.Routes) != 1 || s.Deployments[2].Name != VirtExportProxy {
		t.Error("the input was modified")
	}
}
