package ceiling

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

var ns = Namespaces{Install: "kubevirt", Monitoring: []string{"monitoring", "openshift-monitoring"}}

// Every builtin release's rendering passes the ceiling, monitoring and every
// optional component included: the ceiling is what KubeVirt needs.
func TestBuiltinReleasesPass(t *testing.T) {
	env := deployid.MapEnv{deployid.EnvVirtOperatorImage: "ghcr.io/virt-operator/virt-operator:devel"}
	for _, version := range []string{"v1.8.4", "v1.9.0"} {
		for _, monitoring := range []string{"", "monitoring"} {
			kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"}, Spec: v1.KubeVirtSpec{ImageTag: version}}
			kv.Spec.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{FeatureGates: []string{"Template", "VMExport"}}
			cfg, err := deployid.FromKubeVirt(kv, env)
			if err != nil {
				t.Fatal(err)
			}
			s, err := generate.Generate(generate.Input{Config: cfg, MonitorNamespace: monitoring})
			if err != nil {
				t.Fatal(err)
			}
			if v := Check(s, ns); len(v) > 0 {
				t.Errorf("%s (monitoring %q) exceeds the ceiling: %v", version, monitoring, v)
			}
		}
	}
}

// Each way a strategy could grant more than KubeVirt needs is refused, with
// the object and the rule named.
func TestViolations(t *testing.T) {
	kubevirtRule := rbacv1.PolicyRule{APIGroups: []string{"kubevirt.io"}, Resources: []string{"*"}, Verbs: []string{"*"}}
	clusterRole := func(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
	}
	crb := func(name, role string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: subjects}
	}
	authenticated := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:authenticated"}
	sa := func(namespace string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "kubevirt-controller", Namespace: namespace}
	}
	svc := func(namespace string) *admissionregistrationv1.ServiceReference {
		return &admissionregistrationv1.ServiceReference{Namespace: namespace, Name: "virt-api"}
	}
	for _, tc := range []struct {
		name    string
		objects []client.Object
		want    string // a fragment of the violation; "" for none
	}{
		{"KubeVirt's own wildcard, bound to its ServiceAccount",
			[]client.Object{clusterRole("kubevirt-controller", nil, kubevirtRule), crb("kubevirt-controller", "kubevirt-controller", sa("kubevirt"))}, ""},
		{"every API group", []client.Object{clusterRole("r", nil, rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"pods"}, Verbs: []string{"get"}})},
			"names every API group"},
		{"every resource of the core group", []client.Object{clusterRole("r", nil, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"*"}, Verbs: []string{"get"}})},
			`every verb in API group ""`},
		{"every verb on secrets", []client.Object{clusterRole("r", nil, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"*"}})},
			"outside KubeVirt's"},
		{"escalate", []client.Object{clusterRole("r", nil, rbacv1.PolicyRule{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, Verbs: []string{"escalate"}})},
			`grants "escalate"`},
		{"impersonate", []client.Object{clusterRole("r", nil, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}})},
			`grants "impersonate"`},
		{"every non-resource URL", []client.Object{clusterRole("r", nil, rbacv1.PolicyRule{NonResourceURLs: []string{"*"}, Verbs: []string{"get"}})},
			"every non-resource URL"},
		{"kubevirt.io:default granting pods to everyone",
			[]client.Object{clusterRole("kubevirt.io:default", nil, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}}),
				crb("kubevirt.io:default", "kubevirt.io:default", authenticated)},
			"to everyone"},
		{"KubeVirt's default role to everyone", []client.Object{clusterRole("kubevirt.io:default", nil,
			rbacv1.PolicyRule{APIGroups: []string{"subresources.kubevirt.io"}, Resources: []string{"version"}, Verbs: []string{"get"}}),
			crb("kubevirt.io:default", "kubevirt.io:default", authenticated)}, ""},
		{"cluster-admin to everyone", []client.Object{crb("kubevirt.io:default", "cluster-admin", authenticated)}, "neither in the strategy nor a built-in role"},
		{"cluster-admin to KubeVirt's account", []client.Object{crb("x", "cluster-admin", sa("kubevirt"))}, "neither in the strategy nor a built-in role"},
		{"auth-delegator to KubeVirt's account", []client.Object{crb("x", "system:auth-delegator", sa("kubevirt"))}, ""},
		{"a ServiceAccount of another namespace", []client.Object{clusterRole("r", nil, kubevirtRule), crb("x", "r", sa("attacker-ns"))}, "attacker-ns"},
		{"a user", []client.Object{clusterRole("r", nil, kubevirtRule), crb("x", "r", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "mallory"})}, "binds User mallory"},
		{"aggregated into edit with secrets", []client.Object{clusterRole("kubevirt.io:edit", map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})}, "aggregated into a built-in role"},
		{"an aggregation rule", []client.Object{&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r"},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"x": "y"}}}}}},
			"aggregates other roles"},
		{"a webhook calling a URL", []client.Object{&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "w"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "w.kubevirt.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://evil.example")}}}}},
			"calls a URL"},
		{"a webhook calling another namespace", []client.Object{&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "w"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "w.kubevirt.io", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: svc("attacker-ns")}}}}},
			`namespace "attacker-ns"`},
		{"a conversion webhook calling a URL", []client.Object{&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "vms.kubevirt.io"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://evil.example")}}}}}},
			"conversion webhook calls a URL"},
		{"an APIService elsewhere", []client.Object{&apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.subresources.kubevirt.io"},
			Spec: apiregistrationv1.APIServiceSpec{Service: &apiregistrationv1.ServiceReference{Namespace: "attacker-ns", Name: "x"}}}},
			"not served by a Service of the install namespace"},
		{"a Secret in kube-system", []client.Object{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "kube-system"}}}, `namespace "kube-system"`},
		{"the auth reader binding in kube-system", []client.Object{&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "kube-system"},
			RoleRef:  rbacv1.RoleRef{Kind: "Role", Name: "extension-apiserver-authentication-reader"},
			Subjects: []rbacv1.Subject{sa("kubevirt")}}}, ""},
		{"an SCC for every user", []client.Object{scc(map[string]any{"users": []any{"system:serviceaccount:kubevirt:kubevirt-handler"}, "groups": []any{"system:authenticated"}})},
			"grants groups"},
		{"an SCC for another namespace", []client.Object{scc(map[string]any{"users": []any{"system:serviceaccount:other:x"}})}, "not a ServiceAccount of the install namespace"},
		{"an unknown kind", []client.Object{other("batch/v1", "CronJob")}, `API group "batch"`},
		{"a KubeVirt kind", []client.Object{other("instancetype.kubevirt.io/v1beta1", "VirtualMachineClusterInstancetype")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &strategy.Strategy{}
			for _, o := range tc.objects {
				if err := s.Add(o); err != nil {
					t.Fatal(err)
				}
			}
			got := Check(s, ns)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Fatalf("refused: %v", got)
			case tc.want != "" && !anyContains(got, tc.want):
				t.Fatalf("violations %v, want one saying %q", got, tc.want)
			}
		})
	}
}

func anyContains(vs []Violation, fragment string) bool {
	for _, v := range vs {
		if strings.Contains(v.String(), fragment) {
			return true
		}
	}
	return false
}

func scc(fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: fields}
	u.SetAPIVersion("security.openshift.io/v1")
	u.SetKind(strategy.KindSecurityContextConstraints)
	u.SetName("kubevirt-handler")
	return u
}

func other(apiVersion, kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName("x")
	return u
}
