package sandboxtest

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/config/manager"
	"github.com/virt-operator/virt-operator/config/rbac"
)

// InstallOperatorManifests creates what `kubectl apply -k config/default` gives a
// cluster besides the operator's Deployment: its namespace, its ServiceAccount and
// RBAC (config/rbac, with the install-strategy Job's account) and the
// components' PriorityClass.
func InstallOperatorManifests(t testing.TB, c client.Client, namespace string) {
	t.Helper()
	pc, err := manager.PriorityClass()
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, pc}
	rbacObjs, err := rbac.Objects()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range rbacObjs {
		objs = append(objs, o)
	}
	for _, obj := range objs {
		if err := c.Create(context.Background(), obj); err != nil {
			t.Fatalf("creating %s %s: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}
}

// ServiceAccountConfig is a client config of base's server acting as the
// ServiceAccount namespace/name, with a token valid for hours: a component then
// runs with exactly the RBAC that account has, and the audit log names it.
func ServiceAccountConfig(t testing.TB, c client.Client, base *rest.Config, namespace, name string) *rest.Config {
	t.Helper()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](4 * 3600)}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if err := c.SubResource("token").Create(context.Background(), sa, req); err != nil {
		t.Fatalf("requesting a token for ServiceAccount %s/%s: %v", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(base)
	cfg.BearerToken = req.Status.Token
	return cfg
}
