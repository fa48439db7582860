package apply

import (
	"encoding/json"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

const ns = "kubevirt"

func testConfig(t *testing.T, edit func(*v1.KubeVirtSpec)) *deployid.Config {
	t.Helper()
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: ns}}
	if edit != nil {
		edit(&kv.Spec)
	}
	cfg, err := deployid.FromKubeVirt(kv, deployid.MapEnv{deployid.EnvVirtOperatorImage: "quay.io/kubevirt/virt-operator:v1.9.0"})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func deployment(name string, replicas int32) *appsv1.Deployment {
	sel := map[string]string{"kubevirt.io": name}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"kubevirt.io": name}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"kubernetes.io/os": "linux"},
					Tolerations:  []corev1.Toleration{{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{Name: name, Image: "quay.io/kubevirt/" + name + ":v1.9.0",
						Command: []string{name}, Args: []string{"--port", "8443"}}},
				},
			},
		},
	}
}

func daemonSet(name string) *appsv1.DaemonSet {
	sel := map[string]string{"kubevirt.io": name}
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "quay.io/kubevirt/" + name + ":v1.9.0", Command: []string{name}}}},
			},
		},
	}
}

func service(name string) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"kubevirt.io": name},
			Ports:    []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(8443)}},
		},
	}
}

func clusterRole(name string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}},
	}
}

func clusterRoleBinding(name string) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}, {Kind: "User", Name: "admin"}},
	}
}

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Data:       map[string]string{"ca-bundle": "pem"},
	}
}

func serviceAccount(name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
}

// testStrategy is a small strategy with every component of the bring-up order.
func testStrategy(t *testing.T) *strategy.Strategy {
	t.Helper()
	s := &strategy.Strategy{}
	for _, o := range []client.Object{
		serviceAccount("kubevirt-apiserver"), clusterRole("kubevirt-apiserver"), clusterRoleBinding("kubevirt-apiserver"),
		service("virt-api"), configMap("kubevirt-ca"),
		deployment(VirtAPI, 2), deployment(VirtController, 2), deployment(VirtExportProxy, 1),
		deployment(VirtSynchronizationController, 2), deployment("virt-template-controller", 2),
		daemonSet(VirtHandler),
	} {
		if err := s.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// snapshot is the JSON of every object, to prove an input was not modified.
func snapshot(t *testing.T, s *strategy.Strategy) string {
	t.Helper()
	raw, err := json.Marshal(s.Objects())
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func find[T client.Object](t *testing.T, s *strategy.Strategy, kind, name string) T {
	t.Helper()
	for _, o := range s.Objects() {
		if kindOf(o) == kind && o.GetName() == name {
			return o.(T)
		}
	}
	t.Fatalf("%s %s not in the strategy", kind, name)
	var zero T
	return zero
}
