package strategysource

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

// A remembered verdict answers only for the same manifests, encoding, config
// and monitoring namespace: a ConfigMap changed after it matched, the same
// ConfigMap asked for another monitoring namespace, or its manifests under
// another encoding, are compared anew.
func TestRenderVerdictsNeverOutliveWhatTheyCompared(t *testing.T) {
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt"}, Spec: v1.KubeVirtSpec{ImageTag: "v1.9.0"}}
	cfg, err := deployid.FromKubeVirt(kv, deployid.MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0"})
	if err != nil {
		t.Fatal(err)
	}
	encoded := func(monitorNS, resourceVersion string) *corev1.ConfigMap {
		t.Helper()
		s, err := generate.Generate(generate.Input{Config: cfg, MonitorNamespace: monitorNS})
		if err != nil {
			t.Fatal(err)
		}
		cm, err := strategy.Encode(s, cfg, monitorNS)
		if err != nil {
			t.Fatal(err)
		}
		cm.Name, cm.UID, cm.ResourceVersion = "ours", "uid-ours", resourceVersion
		return cm
	}
	ours := encoded("", "1")
	src := &Source{}
	match := func(cm *corev1.ConfigMap, monitorNS string) bool {
		t.Helper()
		same, err := src.matchesRender(cm, cfg, monitorNS)
		if err != nil {
			t.Fatal(err)
		}
		return same
	}
	if !match(ours, "") {
		t.Fatal("this operator's rendering does not match itself")
	}
	if _, held := rendered.get(renderKeyOf(ours, cfg, "")); !held {
		t.Fatal("the verdict is not remembered")
	}
	// The same name and UID, its manifests swapped for a rendering for
	// another monitoring namespace: not an answer remembered for the old ones.
	if match(encoded("monitoring", "2"), "") {
		t.Error("a ConfigMap changed after it matched still matches")
	}
	if match(ours, "monitoring") {
		t.Error("a rendering for no monitoring namespace matches one for namespace monitoring")
	}
	if !match(ours, "") {
		t.Error("the first answer is lost")
	}
	// The same manifests read as another encoding are other content.
	plain := ours.DeepCopy()
	delete(plain.Annotations, metadata.InstallStrategyConfigMapEncodingAnnotation)
	plain.ResourceVersion = "3"
	if match(plain, "") {
		t.Error("the manifests of a gzip ConfigMap match once its encoding annotation is gone")
	}
}
