package apply

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

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
	Adjust(s)
	for i, w := range vwc.Webhooks {
		if (len(w.MatchConditions) == 1) != (i == 1) {
			t.Fatalf("webhook %s: match conditions %+v", w.Name, w.MatchConditions)
		}
	}
	if mc := vwc.Webhooks[1].MatchConditions[0]; mc.Expression != "object.spec != oldObject.spec" {
		t.Fatalf("expression %q", mc.Expression)
	}
}
