package apply

import (
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

func managed[T client.Object](o T) T {
	l := o.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[metadata.ManagedByLabel] = metadata.ManagedByValue
	o.SetLabels(l)
	return o
}

func names(objs []client.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, RefOf(o).String())
	}
	return out
}

func TestOrphans(t *testing.T) {
	kept := managed(deployment(VirtAPI, 2))
	legacy := deployment("old-component", 1)
	legacy.Labels[metadata.ManagedByLabel] = metadata.LegacyManagedByValue
	strategyCM := managed(configMap("kubevirt-install-strategy-abcde"))
	strategyCM.Labels[metadata.InstallStrategyLabel] = ""
	live := []client.Object{
		managed(clusterRole("old-role")),
		kept,
		legacy,
		deployment("not-ours", 1), // unmanaged
		strategyCM,
		managed(&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "virt-operator-tmp-webhook-xyz"}}),
		managed(&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "old-webhook"}}),
		managed(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "old-certs", Namespace: ns}}),
	}
	got := names(Orphans([]ObjectRef{RefOf(kept)}, live))
	want := []string{"ValidatingWebhookConfiguration old-webhook", "ValidatingWebhookConfiguration virt-operator-tmp-webhook-xyz", "Secret kubevirt/old-certs",
		"Deployment kubevirt/old-component", "ClusterRole old-role"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Orphans = %v, want %v", got, want)
	}
	// With nothing desired, virt-api is an orphan too.
	if acts := Deletions(Orphans(nil, live), "orphan"); len(acts) != 6 || acts[0].Op != OpDelete {
		t.Errorf("%d deletions, want 6", len(acts))
	}
}

func TestUninstallOrder(t *testing.T) {
	crd := managed(&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "kubevirts.kubevirt.io"}})
	objs := []client.Object{
		configMap("b"), serviceAccount("sa"), deployment(VirtAPI, 2), configMap("a"), daemonSet(VirtHandler), crd,
		clusterRole("r"), clusterRoleBinding("r"), service("s"),
	}
	var got [][]string
	for _, g := range UninstallOrder(objs) {
		got = append(got, names(g))
	}
	want := [][]string{
		{"CustomResourceDefinition kubevirts.kubevirt.io"}, {"DaemonSet kubevirt/virt-handler"}, {"Deployment kubevirt/virt-api"},
		{"Service kubevirt/s"}, {"ClusterRoleBinding r"}, {"ClusterRole r"}, {"ServiceAccount kubevirt/sa"},
		{"ConfigMap kubevirt/a", "ConfigMap kubevirt/b"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("UninstallOrder =\n%v\nwant\n%v", got, want)
	}
	if objs[0].GetName() != "b" {
		t.Error("the input was reordered")
	}
}
