package apply

import (
	"reflect"
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// The KubeVirt CR's update webhook gets a match condition on the spec; the
// create and delete webhooks, and anyone else's, are left as they are.
func TestAdjustSkipsSpecUnchangedUpdates(t *testing.T) {
	hook := func(name, path string, ops ...admissionregistrationv1.OperationType) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{Name: name,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "kubevirt-operator-webhook", Path: ptr.To(path)}},
			Rules:        []admissionregistrationv1.RuleWithOperations{{Operations: ops, Rule: admissionregistrationv1.Rule{Resources: []string{"kubevirts"}}}}}
	}
	s := &strategy.Strategy{}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "virt-operator-validator"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			hook("kubevirt-validator.kubevirt.io", "/kubevirt-validate-delete", admissionregistrationv1.Delete),
			hook("kubevirt-update-validator.kubevirt.io", "/kubevirt-validate-update", admissionregistrationv1.Update),
			hook("kubevirt-create-validator.kubevirt.io", "/kubevirt-validate-create", admissionregistrationv1.Create),
		}}
	if err := s.Add(vwc); err != nil {
		t.Fatal(err)
	}
	Adjust(s, testConfig(t, nil))
	for i, w := range vwc.Webhooks {
		if (len(w.MatchConditions) == 1) != (i == 1) {
			t.Fatalf("webhook %s: match conditions %+v", w.Name, w.MatchConditions)
		}
	}
	if mc := vwc.Webhooks[1].MatchConditions[0]; mc.Expression != "object.spec != oldObject.spec" {
		t.Fatalf("expression %q", mc.Expression)
	}
}

// As upstream's operator writes it, a DaemonSet labelled as supporting
// migration CN types gets --migration-cn-types migration and loses the handler
// certificate's volume and mount; one without the label, or with the flag
// already, is left as it is.
func TestAdjustHandlerMigrationCNTypes(t *testing.T) {
	handler := func(label bool, args ...string) *strategy.Strategy {
		ds := daemonSet(VirtHandler)
		if label {
			ds.Labels = map[string]string{SupportsMigrationCNTypesLabel: "true"}
		}
		spec := &ds.Spec.Template.Spec
		spec.Containers[0].Args = args
		spec.Volumes = []corev1.Volume{
			{Name: "libvirt-runtimes"},
			{Name: HandlerCertSecret, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: HandlerCertSecret}}},
		}
		spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: HandlerCertSecret, MountPath: "/etc/virt-handler/clientcertificates"},
			{Name: "libvirt-runtimes", MountPath: "/var/run/kubevirt-libvirt-runtimes"}}
		s := &strategy.Strategy{}
		if err := s.Add(ds); err != nil {
			t.Fatal(err)
		}
		return s
	}
	cfg := testConfig(t, nil)
	got := Adjust(handler(true, "--port", "8443"), cfg).DaemonSets[0].Spec.Template.Spec
	if want := []string{"--port", "8443", "--migration-cn-types", "migration"}; !reflect.DeepEqual(got.Containers[0].Args, want) {
		t.Errorf("args %q, want %q", got.Containers[0].Args, want)
	}
	if len(got.Volumes) != 1 || got.Volumes[0].Name != "libvirt-runtimes" ||
		len(got.Containers[0].VolumeMounts) != 1 || got.Containers[0].VolumeMounts[0].Name != "libvirt-runtimes" {
		t.Errorf("volumes %+v, mounts %+v: want the certificate's gone, the rest kept", got.Volumes, got.Containers[0].VolumeMounts)
	}
	for name, s := range map[string]*strategy.Strategy{
		"without the label":     handler(false, "--port", "8443"),
		"with the flag already": handler(true, "--migration-cn-types=migration,node"),
	} {
		want := s.DaemonSets[0].DeepCopy()
		if got := Adjust(s, cfg).DaemonSets[0]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: changed to %+v", name, got.Spec.Template.Spec)
		}
	}
}

// As upstream's operator writes them, virt-template's two Deployments get the
// CR's TLS configuration as flags on their named container: VersionTLS12
// without one, nothing for an empty one; other Deployments and containers none.
func TestAdjustVirtTemplateTLS(t *testing.T) {
	tmpl := func() *strategy.Strategy {
		s := &strategy.Strategy{}
		api := deployment("virt-template-apiserver", 1)
		api.Spec.Template.Spec.Containers = []corev1.Container{{Name: "apiserver", Args: []string{"--secure-port=8443"}}, {Name: "sidecar"}}
		ctl := deployment("virt-template-controller", 1)
		ctl.Spec.Template.Spec.Containers[0].Name = "manager"
		for _, d := range []*appsv1.Deployment{api, ctl, deployment(VirtAPI, 2)} {
			if err := s.Add(d); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	tests := []struct {
		name      string
		tls       *v1.TLSConfiguration
		wantFlags []string
	}{
		{"no tlsConfiguration: upstream's default", nil, []string{"--tls-min-version", "VersionTLS12"}},
		{"ciphers and a version", &v1.TLSConfiguration{MinTLSVersion: v1.VersionTLS13, Ciphers: []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384"}},
			[]string{"--tls-cipher-suites", "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384", "--tls-min-version", "VersionTLS13"}},
		{"an empty tlsConfiguration: no flags", &v1.TLSConfiguration{}, nil},
	}
	for _, tt := range tests {
		s := tmpl()
		apiArgs, ctlArgs := s.Deployments[0].Spec.Template.Spec.Containers[0].Args, s.Deployments[1].Spec.Template.Spec.Containers[0].Args
		Adjust(s, testConfig(t, func(spec *v1.KubeVirtSpec) { spec.Configuration.TLSConfiguration = tt.tls }))
		if got, want := s.Deployments[0].Spec.Template.Spec.Containers[0].Args, append(slices.Clone(apiArgs), tt.wantFlags...); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: apiserver args %q, want %q", tt.name, got, want)
		}
		if got, want := s.Deployments[1].Spec.Template.Spec.Containers[0].Args, append(slices.Clone(ctlArgs), tt.wantFlags...); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: controller args %q, want %q", tt.name, got, want)
		}
		if got := s.Deployments[0].Spec.Template.Spec.Containers[1].Args; got != nil {
			t.Errorf("%s: the apiserver's other container got %q", tt.name, got)
		}
		if got := s.Deployments[2].Spec.Template.Spec.Containers[0].Args; !reflect.DeepEqual(got, []string{"--port", "8443"}) {
			t.Errorf("%s: virt-api's args %q", tt.name, got)
		}
	}
}
