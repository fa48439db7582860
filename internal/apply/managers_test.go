package apply

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A newer generation than recorded is the operator's own write only when no
// other manager owns a field of the spec.
func TestWrittenByUs(t *testing.T) {
	entry := func(manager, sub, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Subresource: sub, FieldsV1: metav1.NewFieldsV1(fields)}
	}
	for _, tc := range []struct {
		name   string
		fields []metav1.ManagedFieldsEntry
		want   bool
	}{
		{"only the operator", []metav1.ManagedFieldsEntry{entry(FieldManager, "", `{"f:spec":{"f:replicas":{}}}`)}, true},
		{"the operator and the Deployment controller's revision annotation and status", []metav1.ManagedFieldsEntry{
			entry(FieldManager, "", `{"f:spec":{}}`),
			entry("kube-controller-manager", "", `{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}}}`),
			entry("kube-controller-manager", "status", `{"f:status":{}}`)}, true},
		{"the certificate controller's caBundle", []metav1.ManagedFieldsEntry{
			entry(FieldManager, "", `{"f:webhooks":{}}`), entry(CertificatesFieldManager, "", `{"f:webhooks":{}}`)}, true},
		{"a kubectl edit of the spec", []metav1.ManagedFieldsEntry{
			entry(FieldManager, "", `{"f:spec":{}}`), entry("kubectl-edit", "", `{"f:spec":{"f:template":{}}}`)}, false},
		{"a kubectl scale", []metav1.ManagedFieldsEntry{
			entry(FieldManager, "", `{"f:spec":{}}`), entry("kubectl", "scale", `{"f:spec":{"f:replicas":{}}}`)}, false},
		{"someone else's webhook edit", []metav1.ManagedFieldsEntry{
			entry(FieldManager, "", `{"f:webhooks":{}}`), entry("kubectl-edit", "", `{"f:webhooks":{}}`)}, false},
		{"no managed fields: nothing proven", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ManagedFields: tc.fields}}
			if got := writtenByUs(d); got != tc.want {
				t.Fatalf("writtenByUs = %v, want %v", got, tc.want)
			}
		})
	}
}
