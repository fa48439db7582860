package apply

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Only the fields we set count as drift: what another manager added (a
// selector key, a port, a name on our port, a ConfigMap or Secret key) is kept
// by server-side apply and must not make every reconcile write again.
func TestDriftIgnoresOtherManagersAdditions(t *testing.T) {
	svc := func(mutate func(*corev1.Service)) *corev1.Service {
		s := service("virt-api")
		s.Spec.Selector = map[string]string{"kubevirt.io": "virt-api"}
		s.Spec.Ports = []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(8443)}}
		if mutate != nil {
			mutate(s)
		}
		return s
	}
	cm := func(data map[string]string) *corev1.ConfigMap {
		c := configMap("kubevirt-ca")
		c.Data = data
		return c
	}
	secret := func(data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{Data: data}
	}
	apiService := func(bundle string, port int32) *apiregistrationv1.APIService {
		a := &apiregistrationv1.APIService{Spec: apiregistrationv1.APIServiceSpec{
			Group: "subresources.kubevirt.io", Version: "v1", GroupPriorityMinimum: 1000, VersionPriority: 15,
			Service: &apiregistrationv1.ServiceReference{Namespace: "kubevirt", Name: "virt-api", Port: ptr.To(port)},
		}}
		if bundle != "" {
			a.Spec.CABundle = []byte(bundle)
		}
		return a
	}
	for _, tc := range []struct {
		name          string
		desired, live client.Object
		want          string
	}{
		{"a selector key added", svc(nil), svc(func(s *corev1.Service) { s.Spec.Selector["extra"] = "x" }), ""},
		{"our selector key changed", svc(nil), svc(func(s *corev1.Service) { s.Spec.Selector["kubevirt.io"] = "x" }), "selector edited"},
		{"a port added, ours named", svc(nil), svc(func(s *corev1.Service) {
			s.Spec.Ports[0].Name = "https"
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "theirs", Port: 9999})
		}), ""},
		{"our port's target changed", svc(nil), svc(func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(1) }), "ports edited"},
		{"our port gone", svc(nil), svc(func(s *corev1.Service) { s.Spec.Ports[0].Port = 444 }), "ports edited"},
		{"a ConfigMap key added", cm(map[string]string{"a": "1"}), cm(map[string]string{"a": "1", "b": "2"}), ""},
		{"our ConfigMap key changed", cm(map[string]string{"a": "1"}), cm(map[string]string{"a": "2"}), "data edited"},
		{"a Secret key added", secret(map[string][]byte{"a": []byte("1")}), secret(map[string][]byte{"a": []byte("1"), "b": nil}), ""},
		{"our Secret key changed", secret(map[string][]byte{"a": []byte("1")}), secret(map[string][]byte{"a": []byte("2")}), "data edited"},
		{"the certificates controller's bundle on an APIService", apiService("", 443), apiService("CA", 443), ""},
		{"an APIService's port changed beside the bundle", apiService("", 443), apiService("CA", 8443), "spec edited"},
		{"an APIService bundle of ours edited", apiService("ours", 443), apiService("theirs", 443), "spec edited"},
	} {
		if got := ownedFieldsDrift(tc.desired, tc.live); got != tc.want {
			t.Errorf("%s: drift %q, want %q", tc.name, got, tc.want)
		}
	}
}
