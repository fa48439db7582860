package apply

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

func TestAPIReplicas(t *testing.T) {
	for nodes, want := range map[int]int32{0: 2, 1: 1, 2: 2, 19: 2, 29: 2, 30: 3, 100: 10, 1000: 100} {
		if got := APIReplicas(nodes); got != want {
			t.Errorf("%d schedulable nodes: %d replicas, want %d", nodes, got, want)
		}
	}
}

// virt-api is sized by the schedulable nodes unless the CR sizes it; no
// other Deployment is.
func TestScaleAPI(t *testing.T) {
	two, five := int32(2), uint8(5)
	patch := func(name, typ string, kind v1.PatchType, body string) *v1.CustomizeComponents {
		return &v1.CustomizeComponents{Patches: []v1.CustomizeComponentsPatch{{ResourceName: name, ResourceType: typ, Type: kind, Patch: body}}}
	}
	for _, c := range []struct {
		name string
		cfg  deployid.Config
		want int32
	}{
		{name: "from the nodes", want: 30},
		{name: "spec.infra.replicas sizes it", cfg: deployid.Config{Infra: &v1.ComponentConfig{Replicas: &five}}, want: 2},
		{name: "a JSON patch replacing /spec/replicas", cfg: deployid.Config{CustomizeComponents: patch("virt-api", "Deployment", v1.JSONPatchType, `[{"op":"replace","path":"/spec/replicas","value":4}]`)}, want: 2},
		{name: "a JSON patch adding it", cfg: deployid.Config{CustomizeComponents: patch("virt-api", "Deployment", v1.JSONPatchType, `[{"op":"add","path":"/spec/replicas","value":4}]`)}, want: 2},
		{name: "a merge patch of every Deployment", cfg: deployid.Config{CustomizeComponents: patch("*", "Deployment", v1.MergePatchType, `{"spec":{"replicas":4}}`)}, want: 2},
		{name: "a patch of something else", cfg: deployid.Config{CustomizeComponents: patch("virt-api", "Deployment", v1.JSONPatchType, `[{"op":"add","path":"/metadata/labels/x","value":"y"}]`)}, want: 30},
		{name: "another Deployment's replicas", cfg: deployid.Config{CustomizeComponents: patch("virt-controller", "Deployment", v1.MergePatchType, `{"spec":{"replicas":4}}`)}, want: 30},
		{name: "a patch that is no JSON", cfg: deployid.Config{CustomizeComponents: patch("virt-api", "Deployment", v1.JSONPatchType, `not json`)}, want: 30},
	} {
		s := &strategy.Strategy{Deployments: []*appsv1.Deployment{
			{ObjectMeta: metav1.ObjectMeta{Name: VirtAPI}, Spec: appsv1.DeploymentSpec{Replicas: &two}},
			{ObjectMeta: metav1.ObjectMeta{Name: VirtController}, Spec: appsv1.DeploymentSpec{Replicas: &two}}}}
		ScaleAPI(s, &c.cfg, 300)
		if got := *s.Deployments[0].Spec.Replicas; got != c.want {
			t.Errorf("%s: virt-api %d replicas, want %d", c.name, got, c.want)
		}
		if *s.Deployments[1].Spec.Replicas != 2 {
			t.Errorf("%s: virt-controller resized", c.name)
		}
	}
}

func TestSchedulableNodes(t *testing.T) {
	node := func(name, mark string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{metadata.SchedulableLabel: mark}}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(node("a", "true"), node("b", "false"), node("c", "true"),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "d"}}).Build()
	if n, err := SchedulableNodes(context.Background(), c); n != 2 || err != nil {
		t.Fatalf("%d schedulable nodes (%v), want 2", n, err)
	}
}
