package integration

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
	"github.com/virt-operator/virt-operator/internal/strategy/dumpjob"
	"github.com/virt-operator/virt-operator/internal/strategy/trust"
)

// The writer policy, as the API server enforces it: a strategy ConfigMap of
// a deployment ID is written only by a pod of that ID's strategy Job running
// as the dumper ServiceAccount. A cluster admin, the dumper account from any
// other pod or without one, and the Job of another ID are refused; a plain
// ConfigMap and a deletion are not the policy's business.
func TestWriterPolicyLetsOnlyTheJobOfTheIDWrite(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t, ctx, "writer-policy")
	const dumper = "virt-operator-strategy-dumper"
	const id = "0123456789abcdef0123456789abcdef01234567"
	const otherID = "fedcba9876543210fedcba9876543210fedcba98"
	policy, binding := trust.WriterPolicy(ns, dumper)
	t.Cleanup(func() {
		_ = k8s.Delete(ctx, binding)
		_ = k8s.Delete(ctx, policy)
	})
	for _, o := range []client.Object{
		policy, binding,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dumper}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dumper"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "update"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dumper"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "dumper"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: dumper}}},
	} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	strategyCM := func(name, claims string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels:      map[string]string{metadata.InstallStrategyLabel: ""},
			Annotations: map[string]string{metadata.InstallStrategyIdentifierAnnotation: claims}}}
	}
	// The API server takes a new policy up within moments: until an admin's
	// write is refused, it is not in force yet.
	sandboxtest.Eventually(t, waitTimeout, "the writer policy in force", func() (bool, error) {
		err := k8s.Create(ctx, strategyCM("probe", id))
		if err == nil {
			return false, k8s.Delete(ctx, strategyCM("probe", id))
		}
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err), err
	})

	jobPod := podFor(t, ctx, ns, dumper, dumpjob.Name(id, 0)+"-x7k2p")
	otherJobPod := podFor(t, ctx, ns, dumper, dumpjob.Name(otherID, 0)+"-q9w8e")
	asJob := clientWithToken(t, ctx, ns, dumper, jobPod)
	asOtherJob := clientWithToken(t, ctx, ns, dumper, otherJobPod)
	asDumperWithoutPod := clientWithToken(t, ctx, ns, dumper, nil)

	refused := func(who string, c kubernetes.Interface, cm *corev1.ConfigMap) {
		t.Helper()
		_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "written only by the install-strategy Job") {
			t.Errorf("%s wrote strategy ConfigMap %s claiming %s: %v", who, cm.Name, cm.Annotations[metadata.InstallStrategyIdentifierAnnotation], err)
		}
	}
	refused("a cluster admin", kubernetes.NewForConfigOrDie(restConfig), strategyCM("by-admin", id))
	refused("the Job of another ID", asOtherJob, strategyCM("by-other-job", id))
	refused("the dumper account without a pod", asDumperWithoutPod, strategyCM("by-dumper", id))
	if _, err := asJob.CoreV1().ConfigMaps(ns).Create(ctx, strategyCM("genuine", id), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the Job of the ID could not write its strategy: %v", err)
	}
	plain := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}}
	if err := k8s.Create(ctx, plain); err != nil {
		t.Fatalf("a ConfigMap without the strategy label was refused: %v", err)
	}
	// An admin may not edit the genuine strategy, nor label a plain ConfigMap
	// into one; deleting is allowed (a deleted strategy is generated again).
	genuine := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "genuine"}, genuine); err != nil {
		t.Fatal(err)
	}
	genuine.Data = map[string]string{"manifests": "planted"}
	if err := k8s.Update(ctx, genuine); err == nil {
		t.Error("a cluster admin edited the genuine strategy")
	}
	plain.Labels = map[string]string{metadata.InstallStrategyLabel: ""}
	plain.Annotations = map[string]string{metadata.InstallStrategyIdentifierAnnotation: id}
	if err := k8s.Update(ctx, plain); err == nil {
		t.Error("a cluster admin turned a plain ConfigMap into a strategy")
	}
	if err := k8s.Delete(ctx, genuine); err != nil {
		t.Errorf("deleting a strategy ConfigMap was refused: %v", err)
	}
}

// podFor creates a pod object named name running as account (no node runs
// it: a token can be bound to it all the same).
func podFor(t *testing.T, ctx context.Context, ns, account, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{ServiceAccountName: account, Containers: []corev1.Container{{Name: "dump", Image: "quay.io/kubevirt/virt-operator:v1.7.4"}}}}
	if err := k8s.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// clientWithToken is a client authenticated as account with a token bound to
// pod (nil: a token bound to nothing).
func clientWithToken(t *testing.T, ctx context.Context, ns, account string, pod *corev1.Pod) kubernetes.Interface {
	t.Helper()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(600))}}
	if pod != nil {
		req.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	admin := kubernetes.NewForConfigOrDie(restConfig)
	tok, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, account, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(restConfig)
	cfg.BearerToken = tok.Status.Token
	return kubernetes.NewForConfigOrDie(cfg)
}
