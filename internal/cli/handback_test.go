package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/operator"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/trust"
)

// A hand-back leaves upstream's operator nothing of this one's to keep stale:
// its conditions, status fields, annotations and strategy ConfigMaps go;
// upstream's stay. Refused while this operator still runs.
func TestHandback(t *testing.T) {
	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt",
		Annotations: map[string]string{"kubevirt.io/virt-operator-skip-preflight": "all", "team": "platform"}},
		Status: v1.KubeVirtStatus{Phase: v1.KubeVirtPhaseDeployed, ObservedDeploymentID: "ours", TargetDeploymentID: "ours",
			Conditions: []v1.KubeVirtCondition{{Type: v1.KubeVirtConditionAvailable, Status: "True"}, {Type: v1.KubeVirtConditionReady, Status: "True"},
				{Type: v1.KubeVirtConditionDataRetained, Status: "True"}},
			HandlerRollout: &v1.HandlerRolloutStatus{Phase: "Successful"}, History: []v1.DeploymentRecord{{DeploymentID: "ours"}},
			InstallStrategies: []v1.InstallStrategyRef{{DeploymentID: "ours"}}}}
	strategyCM := func(name string, ours bool) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: name, Labels: map[string]string{metadata.InstallStrategyLabel: ""},
			Annotations: map[string]string{}}}
		if ours {
			cm.Annotations[strategy.MonitorNamespaceAnnotation] = ""
		}
		return cm
	}
	running := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-operator"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}}
	delegated := strategyCM("delegated", false) // dumped by a release's own operator for this operator's ID
	delegated.Annotations[metadata.InstallStrategyIdentifierAnnotation] = "ours"
	policy, binding := trust.WriterPolicy("kubevirt", "virt-operator-strategy-dumper")
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(kv, running, strategyCM("ours", true), strategyCM("upstreams", false), delegated, policy, binding).
		WithStatusSubresource(&v1.KubeVirt{}).Build()
	ctx := context.Background()
	var out bytes.Buffer
	if err := handback(ctx, c, "kubevirt", &out); err == nil || !strings.Contains(err.Error(), "scale it to 0") {
		t.Fatalf("with the operator running: %v", err)
	}
	running.Spec.Replicas = ptr.To[int32](0)
	if err := c.Update(ctx, running); err != nil {
		t.Fatal(err)
	}
	if err := handback(ctx, c, "kubevirt", &out); err != nil {
		t.Fatal(err)
	}
	got := &v1.KubeVirt{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(kv), got); err != nil {
		t.Fatal(err)
	}
	st := got.Status
	if len(st.Conditions) != 1 || st.Conditions[0].Type != v1.KubeVirtConditionAvailable || st.HandlerRollout != nil || st.History != nil ||
		st.InstallStrategies != nil || st.ObservedDeploymentID != "ours" {
		t.Fatalf("status after hand-back: %+v", st)
	}
	if _, left := got.Annotations["kubevirt.io/virt-operator-skip-preflight"]; left || got.Annotations["team"] != "platform" {
		t.Fatalf("annotations %v", got.Annotations)
	}
	for _, name := range []string{"ours", "delegated"} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: "kubevirt", Name: name}, &corev1.ConfigMap{}); err == nil {
			t.Fatalf("this operator's strategy ConfigMap %s is still there", name)
		}
	}
	for _, o := range []client.Object{policy, binding} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err == nil {
			t.Fatalf("the writer policy %T is still there: it would refuse upstream's strategy", o)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "kubevirt", Name: "upstreams"}, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("upstream's strategy ConfigMap was deleted: %v", err)
	}
}
