package kubevirt

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/preflight"
)

func TestWatchPredicates(t *testing.T) {
	labelled := func(obj client.Object, labels map[string]string) client.Object { obj.SetLabels(labels); return obj }
	for _, tc := range []struct {
		name string
		pass func(client.Object) bool
		obj  client.Object
		want bool
	}{
		{"a managed Deployment", managedOrStrategy, labelled(&appsv1.Deployment{}, map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}), true},
		{"one upstream's operator manages", managedOrStrategy, labelled(&appsv1.Deployment{}, map[string]string{metadata.ManagedByLabel: metadata.LegacyManagedByValue}), true},
		{"a strategy ConfigMap", managedOrStrategy, labelled(&corev1.ConfigMap{}, map[string]string{metadata.InstallStrategyLabel: ""}), true},
		{"a user's ConfigMap beside KubeVirt", managedOrStrategy, &corev1.ConfigMap{}, false},
		{"someone else's Secret", managedOrStrategy, labelled(&corev1.Secret{}, map[string]string{metadata.ManagedByLabel: "helm"}), false},
		{"a virt-handler pod", rolloutPod, labelled(&corev1.Pod{}, map[string]string{metadata.AppLabel: "virt-handler"}), true},
		{"a pre-pull pod", rolloutPod, labelled(&corev1.Pod{}, map[string]string{metadata.AppLabel: preflight.PrepullValue}), true},
		{"a virt-api pod", rolloutPod, labelled(&corev1.Pod{}, map[string]string{metadata.AppLabel: "virt-api"}), false},
	} {
		if got := tc.pass(tc.obj); got != tc.want {
			t.Errorf("%s: passes %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The operator's own status writes do not bring it back; spec, labels,
// annotations, finalizers and deletion do.
func TestNotStatusOnly(t *testing.T) {
	base := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Generation: 1}}
	changed := func(mutate func(*v1.KubeVirt)) *v1.KubeVirt { kv := base.DeepCopy(); mutate(kv); return kv }
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		new  *v1.KubeVirt
		want bool
	}{
		{"status only", changed(func(kv *v1.KubeVirt) { kv.Status.Phase = v1.KubeVirtPhaseDeployed }), false},
		{"spec (a new generation)", changed(func(kv *v1.KubeVirt) { kv.Generation = 2 }), true},
		{"a label", changed(func(kv *v1.KubeVirt) { kv.Labels = map[string]string{"a": "b"} }), true},
		{"an annotation", changed(func(kv *v1.KubeVirt) { kv.Annotations = map[string]string{"a": "b"} }), true},
		{"a finalizer", changed(func(kv *v1.KubeVirt) { kv.Finalizers = []string{"f"} }), true},
		{"deletion", changed(func(kv *v1.KubeVirt) { kv.DeletionTimestamp = &now }), true},
	} {
		if got := notStatusOnly.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: reconcile %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A node gaining or losing virt-handler's schedulable mark brings the operator
// back (virt-api's replicas); a heartbeat or another label does not.
func TestSchedulableChanged(t *testing.T) {
	node := func(mark string, heartbeat int64) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "1", Labels: map[string]string{"zone": "a"}}}
		if mark != "" {
			n.Labels[metadata.SchedulableLabel] = mark
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, LastHeartbeatTime: metav1.Unix(heartbeat, 0)}}
		return n
	}
	for _, c := range []struct {
		name     string
		old, new *corev1.Node
		want     bool
	}{
		{"marked", node("", 1), node("true", 1), true},
		{"unmarked by virt-handler", node("true", 1), node("false", 1), true},
		{"a heartbeat", node("true", 1), node("true", 2), false},
		{"never marked", node("", 1), node("", 2), false},
	} {
		if got := schedulableChanged.Update(event.UpdateEvent{ObjectOld: c.old, ObjectNew: c.new}); got != c.want {
			t.Errorf("%s: passes %v, want %v", c.name, got, c.want)
		}
	}
	if !schedulableChanged.Create(event.CreateEvent{Object: node("true", 1)}) || schedulableChanged.Create(event.CreateEvent{Object: node("", 1)}) ||
		!schedulableChanged.Delete(event.DeleteEvent{Object: node("true", 1)}) {
		t.Error("a marked node created or deleted must pass, an unmarked one created must not")
	}
}
