package metadata

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
)

// The literal strings other operator versions rely on (upstream pins them too).
func TestPinnedStrings(t *testing.T) {
	pinned := map[string]string{
		ManagedByLabel + "=" + ManagedByValue: "app.kubernetes.io/managed-by=virt-operator",
		InstallStrategyVersionAnnotation:      "kubevirt.io/install-strategy-version",
		InstallStrategyRegistryAnnotation:     "kubevirt.io/install-strategy-registry",
		InstallStrategyIdentifierAnnotation:   "kubevirt.io/install-strategy-identifier",
		KubeVirtFinalizer:                     "kubevirt.io/foregroundDeleteKubeVirt",
		GenerationAnnotation:                  "kubevirt.io/generation",
		CustomizerIdentifierAnnotation:        "kubevirt.io/customizer-identifier",
		AppLabel + "=" + LauncherApp:          "kubevirt.io=virt-launcher",
		CreatedByLabel:                        "kubevirt.io/created-by",
	}
	for got, want := range pinned {
		if got != want {
			t.Errorf("constant %q, want %q", got, want)
		}
	}
}

func config(t *testing.T, edit func(*v1.KubeVirtSpec)) *deployid.Config {
	t.Helper()
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"}}
	if edit != nil {
		edit(&kv.Spec)
	}
	cfg, err := deployid.FromKubeVirt(kv, deployid.MapEnv{deployid.EnvVirtOperatorImage: "quay.io/kubevirt/virt-operator:v1.9.0"})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestInject(t *testing.T) {
	long := strings.Repeat("x", 64)
	tests := []struct {
		name       string
		spec       func(*v1.KubeVirtSpec)
		existing   map[string]string
		wantLabels map[string]string
	}{
		{"defaults", nil, nil, map[string]string{ManagedByLabel: "virt-operator", AppComponentLabel: "kubevirt"}},
		{"product values", func(s *v1.KubeVirtSpec) {
			s.ProductName, s.ProductVersion, s.ProductComponent = "acme", "2.1", "compute"
		}, nil,
			map[string]string{ManagedByLabel: "virt-operator", AppPartOfLabel: "acme", AppVersionLabel: "2.1", AppComponentLabel: "compute"}},
		{"invalid values are dropped", func(s *v1.KubeVirtSpec) { s.ProductName, s.ProductVersion, s.ProductComponent = "bad name", long, "-x" }, nil,
			map[string]string{ManagedByLabel: "virt-operator", AppComponentLabel: "kubevirt"}},
		{"the strategy's own labels stay without product values (its version label is the KubeVirt version)", nil,
			map[string]string{AppVersionLabel: "v1.9.0", AppLabel: "virt-api", ManagedByLabel: "kubevirt-operator"},
			map[string]string{ManagedByLabel: "virt-operator", AppComponentLabel: "kubevirt", AppLabel: "virt-api", AppVersionLabel: "v1.9.0"}},
		{"product values win over the strategy's", func(s *v1.KubeVirtSpec) { s.ProductVersion = "2.1" },
			map[string]string{AppVersionLabel: "v1.9.0"},
			map[string]string{ManagedByLabel: "virt-operator", AppComponentLabel: "kubevirt", AppVersionLabel: "2.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config(t, tt.spec)
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Labels: tt.existing, Annotations: map[string]string{"keep": "me"}}}
			Inject(d, cfg)
			if !equalMaps(d.Labels, tt.wantLabels) {
				t.Errorf("labels = %v, want %v", d.Labels, tt.wantLabels)
			}
			wantAnn := map[string]string{"keep": "me", InstallStrategyVersionAnnotation: "v1.9.0",
				InstallStrategyRegistryAnnotation: "quay.io/kubevirt", InstallStrategyIdentifierAnnotation: cfg.ID}
			if !equalMaps(d.Annotations, wantAnn) {
				t.Errorf("annotations = %v, want %v", d.Annotations, wantAnn)
			}
			if !DeploymentIsUpToDate(d, TargetOf(cfg)) {
				t.Error("an injected Deployment is not up to date")
			}
		})
	}
}

func TestInjectPodTemplateAndGeneration(t *testing.T) {
	cfg := config(t, nil)
	ds := &appsv1.DaemonSet{}
	InjectPodTemplate(&ds.Spec.Template, cfg)
	Inject(ds, cfg)
	InjectGeneration(ds, 7)
	pod := &corev1.Pod{ObjectMeta: ds.Spec.Template.ObjectMeta}
	if !PodIsUpToDate(pod, TargetOf(cfg)) || !DaemonSetIsUpToDate(ds, TargetOf(cfg)) {
		t.Error("injected pod template / DaemonSet not up to date")
	}
	if _, ok := ds.Spec.Template.Annotations[GenerationAnnotation]; ok {
		t.Error("the pod template got the generation annotation")
	}
	if ds.Annotations[GenerationAnnotation] != "7" || !IsManaged(ds) || !IsManaged(&ds.Spec.Template) {
		t.Errorf("DaemonSet metadata: %v %v", ds.Annotations, ds.Labels)
	}
}

func TestIsUpToDate(t *testing.T) {
	target := Target{Version: "v1", Registry: "r", ID: "id1"}
	full := map[string]string{InstallStrategyVersionAnnotation: "v1", InstallStrategyRegistryAnnotation: "r", InstallStrategyIdentifierAnnotation: "id1"}
	with := func(key, value string) map[string]string {
		m := map[string]string{}
		for k, v := range full {
			m[k] = v
		}
		if value == "<absent>" {
			delete(m, key)
		} else {
			m[key] = value
		}
		return m
	}
	tests := []struct {
		name        string
		annotations map[string]string
		target      Target
		want        bool
	}{
		{"all match", full, target, true},
		{"other id", with(InstallStrategyIdentifierAnnotation, "id2"), target, false},
		{"other version", with(InstallStrategyVersionAnnotation, "v2"), target, false},
		{"other registry", with(InstallStrategyRegistryAnnotation, "r2"), target, false},
		{"registry annotation missing though target registry is empty", with(InstallStrategyRegistryAnnotation, "<absent>"), Target{Version: "v1", ID: "id1"}, false},
		{"empty registry on both", with(InstallStrategyRegistryAnnotation, ""), Target{Version: "v1", ID: "id1"}, true},
		{"no annotations", nil, target, false},
		{"target without ID", map[string]string{InstallStrategyVersionAnnotation: "", InstallStrategyRegistryAnnotation: "", InstallStrategyIdentifierAnnotation: ""}, Target{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: tt.annotations}}
			if got := PodIsUpToDate(pod, tt.target); got != tt.want {
				t.Errorf("PodIsUpToDate = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTargetsFromStatus(t *testing.T) {
	st := &v1.KubeVirtStatus{TargetKubeVirtVersion: "v2", TargetKubeVirtRegistry: "r2", TargetDeploymentID: "b",
		ObservedKubeVirtVersion: "v1", ObservedKubeVirtRegistry: "r1", ObservedDeploymentID: "a"}
	if got := TargetFromStatus(st); got != (Target{"v2", "r2", "b"}) {
		t.Errorf("TargetFromStatus = %+v", got)
	}
	if got := ObservedFromStatus(st); got != (Target{"v1", "r1", "a"}) {
		t.Errorf("ObservedFromStatus = %+v", got)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
