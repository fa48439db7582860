package install_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/preflight"
)

// An upgrade to a tag whose images cannot be pulled (the sandbox's "-nopull")
// is held by the preflight before any virt-handler pod changes, with
// Upgradeable False naming the image and node; the documented override
// releases it.
func TestPreflightHoldsAnUnpullableUpgrade(t *testing.T) {
	t.Parallel()
	e := startEnv(t, 4)
	e.createKubeVirt(v1.KubeVirtSpec{ImageTag: "v1.8.4", HandlerRollout: &v1.HandlerRolloutPolicy{BakeTime: &v1.Duration{Duration: time.Second}}})
	e.waitAvailable(3 * time.Minute)
	template := e.daemonSet("virt-handler").Spec.Template.Spec.Containers[0].Image

	e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0-nopull" })
	e.eventually("the preflight failing on the image pull", 2*time.Minute, func() (bool, error) {
		c := condition(e.kubeVirt(), v1.KubeVirtConditionUpgradeable)
		return c != nil && c.Status == "False" && c.Reason == preflight.CheckImages && strings.Contains(c.Message, "-nopull"), nil
	})
	// The pass that failed the preflight wrote this after whatever it wrote
	// to virt-handler; the passes after it have had their say once the
	// operator leaves virt-handler alone.
	e.waitOperatorQuiet(3*time.Second, time.Minute, "daemonsets", "pods")
	kv := e.kubeVirt()
	if img := e.daemonSet("virt-handler").Spec.Template.Spec.Containers[0].Image; img != template || e.handlerPodsOn("v1.9.0-nopull") != 0 {
		t.Fatalf("virt-handler changed under a failed preflight: template %s", img)
	}
	if h := kv.Status.RolloutHold; h == nil || h.Reason != "PreflightCheck" || !strings.Contains(h.Message, preflight.SkipAnnotation) {
		t.Fatalf("rolloutHold %+v: want the preflight named with its override", h)
	}
	t.Logf("held: %s", condition(kv, v1.KubeVirtConditionUpgradeable).Message)

	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+preflight.SkipAnnotation+`":"ImagePull"}}}`))
	if err := e.c.Patch(context.Background(), &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: namespace}}, patch); err != nil {
		t.Fatal(err)
	}
	e.eventually("the override releasing the upgrade", 2*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		c := condition(kv, v1.KubeVirtConditionUpgradeable)
		return c != nil && c.Status == "True" && kv.Status.RolloutHold == nil &&
			e.daemonSet("virt-handler").Spec.Template.Spec.Containers[0].Image != template, nil
	})
	t.Logf("released: %s", condition(e.kubeVirt(), v1.KubeVirtConditionUpgradeable).Message)
}
