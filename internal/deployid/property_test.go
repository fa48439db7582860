package deployid

import (
	"math/rand"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// A dimension is one spec input with a few variants. Variants of an "in" dimension
// produce different created objects; variants of an "out" dimension do not.
type dimension struct {
	name     string
	variants []func(*v1.KubeVirtSpec)
}

func set(f func(*v1.KubeVirtSpec)) func(*v1.KubeVirtSpec) { return f }

var nothing = set(func(*v1.KubeVirtSpec) {})

var inDimensions = []dimension{
	{"imageTag", []func(*v1.KubeVirtSpec){nothing, set(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.1" }), set(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.2" })}},
	{"imageRegistry", []func(*v1.KubeVirtSpec){nothing, set(func(s *v1.KubeVirtSpec) { s.ImageRegistry = "r.io" })}},
	{"imagePullPolicy", []func(*v1.KubeVirtSpec){nothing, set(func(s *v1.KubeVirtSpec) { s.ImagePullPolicy = corev1.PullAlways }), set(func(s *v1.KubeVirtSpec) { s.ImagePullPolicy = corev1.PullNever })}},
	{"imagePullSecrets", []func(*v1.KubeVirtSpec){
		nothing,
		set(func(s *v1.KubeVirtSpec) { s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "a"}} }),
		set(func(s *v1.KubeVirtSpec) { s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "a"}, {Name: "b"}} }),
		set(func(s *v1.KubeVirtSpec) { s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "b"}, {Name: "a"}} }),
	}},
	{"monitoring", []func(*v1.KubeVirtSpec){nothing, set(func(s *v1.KubeVirtSpec) { s.MonitorNamespace = "m" }), set(func(s *v1.KubeVirtSpec) { s.MonitorAccount = "m" })}},
	{"product", []func(*v1.KubeVirtSpec){nothing, set(func(s *v1.KubeVirtSpec) { s.ProductName = "p" }), set(func(s *v1.KubeVirtSpec) { s.ProductComponent = "p" })}},
	{"infra", []func(*v1.KubeVirtSpec){
		nothing,
		set(func(s *v1.KubeVirtSpec) { s.Infra = &v1.ComponentConfig{Replicas: ptr(uint8(2))} }),
		set(func(s *v1.KubeVirtSpec) {
			s.Infra = &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{NodeSelector: map[string]string{"a": "b"}}}
		}),
		set(func(s *v1.KubeVirtSpec) {
			s.Infra = &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{Tolerations: []corev1.Toleration{{Key: "a", Operator: corev1.TolerationOpExists}}}}
		}),
	}},
	{"workloads", []func(*v1.KubeVirtSpec){nothing, set(func(s *v1.KubeVirtSpec) {
		s.Workloads = &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{NodeSelector: map[string]string{"a": "b"}}}
	})}},
	{"customizeComponents", []func(*v1.KubeVirtSpec){
		nothing,
		set(func(s *v1.KubeVirtSpec) {
			s.CustomizeComponents.Patches = []v1.CustomizeComponentsPatch{{ResourceName: "a", ResourceType: "Deployment", Type: v1.MergePatchType, Patch: "{}"}}
		}),
		set(func(s *v1.KubeVirtSpec) {
			s.CustomizeComponents.Flags = &v1.Flags{Handler: map[string]string{"v": "4"}}
		}),
	}},
	{"synchronizationPort", []func(*v1.KubeVirtSpec){nothing, set(func(s *v1.KubeVirtSpec) { s.SynchronizationPort = "9999" })}},
	{"uninstallStrategy", []func(*v1.KubeVirtSpec){nothing, set(func(s *v1.KubeVirtSpec) { s.UninstallStrategy = v1.UninstallStrategyRemoveWorkloads })}},
	{"componentGates", []func(*v1.KubeVirtSpec){nothing, gates(GateVMStatsCollector), gates(GatePlugins), disabledGates(GateTemplate)}},
	{"migrationNetwork", []func(*v1.KubeVirtSpec){nothing, set(func(s *v1.KubeVirtSpec) { migrations(s).Network = ptr("n") })}},
}

var outDimensions = []dimension{
	{"workloadUpdateStrategy", []func(*v1.KubeVirtSpec){
		nothing,
		set(func(s *v1.KubeVirtSpec) { s.WorkloadUpdateStrategy.BatchEvictionSize = ptr(3) }),
		set(func(s *v1.KubeVirtSpec) {
			s.WorkloadUpdateStrategy.WorkloadUpdateMethods = []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodEvict}
			s.WorkloadUpdateStrategy.BatchEvictionInterval = &v1.Duration{Duration: time.Second}
		}),
	}},
	{"certificateRotateStrategy", []func(*v1.KubeVirtSpec){nothing, set(func(s *v1.KubeVirtSpec) {
		s.CertificateRotateStrategy.SelfSigned = &v1.KubeVirtSelfSignConfiguration{CA: &v1.CertConfig{Duration: &v1.Duration{Duration: time.Hour}}}
	})}},
	// Applied after componentGates, so they only add gates that change behaviour.
	{"behaviourGates", []func(*v1.KubeVirtSpec){nothing, set(func(s *v1.KubeVirtSpec) {
		devConfig(s).FeatureGates = append(devConfig(s).FeatureGates, "Snapshot")
	})}},
	{"parallelMigrations", []func(*v1.KubeVirtSpec){nothing, set(func(s *v1.KubeVirtSpec) { migrations(s).ParallelMigrationsPerCluster = ptr(uint32(2)) })}},
}

type choice struct{ in, out []int }

func randomChoice(r *rand.Rand) choice {
	c := choice{in: make([]int, len(inDimensions)), out: make([]int, len(outDimensions))}
	for i, d := range inDimensions {
		c.in[i] = r.Intn(len(d.variants))
	}
	for i, d := range outDimensions {
		c.out[i] = r.Intn(len(d.variants))
	}
	return c
}

// neighbour keeps most in-choices, so equal pairs are common, and rerolls outs.
func neighbour(r *rand.Rand, c choice) choice {
	n := randomChoice(r)
	copy(n.in, c.in)
	if r.Intn(2) == 0 {
		i := r.Intn(len(inDimensions))
		n.in[i] = r.Intn(len(inDimensions[i].variants))
	}
	return n
}

func (c choice) kubeVirt() *v1.KubeVirt {
	return newKubeVirt(func(kv *v1.KubeVirt) {
		for i, d := range inDimensions {
			d.variants[c.in[i]](&kv.Spec)
		}
		for i, d := range outDimensions {
			d.variants[c.out[i]](&kv.Spec)
		}
	})
}

// For generated pairs of specs: the IDs differ exactly when an ID-relevant input
// differs, whatever the runtime-only settings. Until the install-strategy renderer
// exists, "relevant" is judged by the dimension tables and by the configs.
func TestPropertyIDsDifferExactlyWhenRelevantInputsDiffer(t *testing.T) {
	r := rand.New(rand.NewSource(20260801))
	equalPairs := 0
	for range 3000 {
		a := randomChoice(r)
		b := neighbour(r, a)
		ca, cb := mustConfig(t, a.kubeVirt(), baseEnv()), mustConfig(t, b.kubeVirt(), baseEnv())
		relevantEqual := reflect.DeepEqual(a.in, b.in)
		if relevantEqual {
			equalPairs++
		}
		if idsEqual := ca.ID == cb.ID; idsEqual != relevantEqual {
			t.Fatalf("in-choices %v vs %v (equal=%v) gave IDs equal=%v\n%s\n%s", a.in, b.in, relevantEqual, idsEqual, ca.JSON(), cb.JSON())
		}
		ca.ID, cb.ID = "", ""
		if configsEqual := reflect.DeepEqual(ca, cb); configsEqual != relevantEqual {
			t.Fatalf("in-choices %v vs %v: configs equal=%v\n%s\n%s", a.in, b.in, configsEqual, ca.JSON(), cb.JSON())
		}
	}
	if equalPairs < 300 {
		t.Fatalf("only %d equal pairs: the generator does not exercise the 'same ID' direction", equalPairs)
	}
}
