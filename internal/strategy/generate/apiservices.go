package generate

import (
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// apiServices register virt-api as the server of subresources.kubevirt.io (VM
// start/stop, console, VNC, ...). caBundle is filled at apply time.
func (b *builder) apiServices() {
	for _, version := range []string{"v1", "v1alpha3"} {
		m := meta(version+"."+groupSubresources, "", nil)
		m.Annotations = map[string]string{metadata.WebhookCertificateSecretAnnotation: secretAPICerts}
		b.add(&apiregistrationv1.APIService{
			ObjectMeta: m,
			Spec: apiregistrationv1.APIServiceSpec{
				Service:              &apiregistrationv1.ServiceReference{Namespace: b.ns, Name: svcAPI, Port: ptr.To(int32(portService))},
				Group:                groupSubresources,
				Version:              version,
				GroupPriorityMinimum: 1000,
				VersionPriority:      15,
			},
		})
	}
}
