package vmsim

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

func TestLauncherImageFromArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"separate value", []string{"--launcher-image", "img:v1", "--port", "8443"}, "img:v1"},
		{"equals form", []string{"--port=8443", "--launcher-image=img@sha256:01"}, "img@sha256:01"},
		{"flag without value", []string{"--launcher-image"}, ""},
		{"empty value", []string{"--launcher-image="}, ""},
		{"absent", []string{"--exporter-image", "x"}, ""},
		{"similar flag", []string{"--launcher-image-pull", "x"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := LauncherImageFromArgs(tc.args)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("LauncherImageFromArgs(%q) = %q, %v; want %q", tc.args, got, ok, tc.want)
			}
		})
	}
}

func controllerDeployment(namespace, name string, args ...string) appsv1.Deployment {
	return appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "virt-controller", Args: args}},
		}}},
	}
}

func TestCurrentLauncherImage(t *testing.T) {
	deleting := controllerDeployment("a", "virt-controller", "--launcher-image", "deleting:v0")
	deleting.DeletionTimestamp = &metav1.Time{}
	for _, tc := range []struct {
		name        string
		deployments []appsv1.Deployment
		want        string
	}{
		{"none: fallback", nil, "fallback"},
		{"no flag: fallback", []appsv1.Deployment{controllerDeployment("kubevirt", "virt-controller", "--port", "1")}, "fallback"},
		{"one", []appsv1.Deployment{controllerDeployment("kubevirt", "virt-controller", "--launcher-image", "img:v2")}, "img:v2"},
		{"first by namespace", []appsv1.Deployment{
			controllerDeployment("z", "virt-controller", "--launcher-image", "z:v1"),
			controllerDeployment("b", "virt-controller", "--launcher-image", "b:v1"),
		}, "b:v1"},
		{"being deleted skipped", []appsv1.Deployment{deleting, controllerDeployment("b", "virt-controller", "--launcher-image", "b:v1")}, "b:v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := currentLauncherImage(tc.deployments, "fallback"); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The operator's own virt-controller Deployment names the launcher image the
// simulator reads.
func TestLauncherImageOfGeneratedVirtController(t *testing.T) {
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"}}
	cfg, err := deployid.FromKubeVirt(kv, deployid.MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := generate.Generate(generate.Input{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range s.Deployments {
		if d.Labels[AppLabel] != ControllerApp {
			continue
		}
		got, ok := LauncherImageFromDeployment(d)
		if want := cfg.Image(deployid.Launcher); !ok || got != want {
			t.Errorf("launcher image of %s: %q, want %q", d.Name, got, want)
		}
		return
	}
	t.Fatalf("no Deployment labelled %s=%s in the strategy", AppLabel, ControllerApp)
}
