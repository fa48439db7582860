package apply

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestLeavesOutWebhooks(t *testing.T) {
	validating := func(names ...string) *admissionregistrationv1.ValidatingWebhookConfiguration {
		c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "v"}}
		for _, n := range names {
			c.Webhooks = append(c.Webhooks, admissionregistrationv1.ValidatingWebhook{Name: n})
		}
		return c
	}
	mutating := func(names ...string) *admissionregistrationv1.MutatingWebhookConfiguration {
		c := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "m"}}
		for _, n := range names {
			c.Webhooks = append(c.Webhooks, admissionregistrationv1.MutatingWebhook{Name: n})
		}
		return c
	}
	unstructuredOf := func(obj client.Object) client.Object {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: m}
	}
	cases := []struct {
		name          string
		desired, live client.Object
		want          bool
	}{
		{"absent: a create", validating("a"), nil, false},
		{"the same webhooks", validating("a", "b"), validating("b", "a"), false},
		{"one added", validating("a", "b"), validating("a"), false},
		{"one left out", validating("a"), validating("a", "b"), true},
		{"all left out", validating(), validating("a"), true},
		{"one left out, mutating", mutating("a"), mutating("a", "b"), true},
		{"one left out, the live copy unstructured", validating("a"), unstructuredOf(validating("a", "b")), true},
		{"not a webhook configuration", &corev1.ConfigMap{}, &corev1.ConfigMap{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := leavesOutWebhooks(c.desired, c.live); got != c.want {
				t.Errorf("leavesOutWebhooks = %v, want %v", got, c.want)
			}
		})
	}
}
