package admission

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/release"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

// seed is TEST_SEED, else the time: a failure prints the seed to run again.
func seed(t *testing.T) (*rand.Rand, int64) {
	t.Helper()
	s := time.Now().UnixNano()
	if env := os.Getenv("TEST_SEED"); env != "" {
		var err error
		if s, err = strconv.ParseInt(env, 10, 64); err != nil {
			t.Fatalf("TEST_SEED: %v", err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("run again with TEST_SEED=%d", s)
		}
	})
	return rand.New(rand.NewPCG(uint64(s), 0)), s
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// mostly picks one of good, and one of bad once in six times.
func mostly[T any](r *rand.Rand, good, bad []T) T {
	if r.IntN(6) == 0 {
		return pick(r, bad...)
	}
	return pick(r, good...)
}

// randomPlacement is a nodePlacement biased to what the API server refuses:
// label keys and values, toleration operators, keys, values and effects,
// selector operators and weights.
func randomPlacement(r *rand.Rand) *v1.NodePlacement {
	key := func() string {
		return mostly(r, []string{"zone", "node-role.kubernetes.io/infra", "example.com/gpu", "kubernetes.io/hostname"}, []string{"node role!", "a/b/c", "", "-x", strings.Repeat("k", 64)})
	}
	value := func() string {
		return mostly(r, []string{"", "a", "yes", "4", "node-1"}, []string{"a b", "-x", strings.Repeat("v", 64)})
	}
	p := &v1.NodePlacement{}
	if r.IntN(2) == 0 {
		p.NodeSelector = map[string]string{key(): value()}
	}
	for range r.IntN(3) {
		t := corev1.Toleration{Key: key(), Value: value(),
			Operator: mostly(r, []corev1.TolerationOperator{"", corev1.TolerationOpEqual, corev1.TolerationOpExists}, []corev1.TolerationOperator{"Sometimes", corev1.TolerationOpLt}),
			Effect:   mostly(r, []corev1.TaintEffect{"", corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute, corev1.TaintEffectPreferNoSchedule}, []corev1.TaintEffect{"NoScheduleEver"})}
		if r.IntN(3) == 0 {
			secs := int64(r.IntN(100))
			t.TolerationSeconds = &secs
		}
		p.Tolerations = append(p.Tolerations, t)
	}
	requirement := func() corev1.NodeSelectorRequirement {
		rq := corev1.NodeSelectorRequirement{Key: key(),
			Operator: mostly(r, []corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists, corev1.NodeSelectorOpGt}, []corev1.NodeSelectorOperator{"Near"})}
		for range r.IntN(3) {
			rq.Values = append(rq.Values, value())
		}
		return rq
	}
	switch r.IntN(4) {
	case 0:
		terms := []corev1.NodeSelectorTerm{}
		for range r.IntN(3) {
			terms = append(terms, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{requirement()}})
		}
		p.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution:  &corev1.NodeSelector{NodeSelectorTerms: terms},
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: mostly(r, []int32{1, 50, 100}, []int32{0, 101, -1}), Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{requirement()}}}}}}
	case 1:
		term := corev1.PodAffinityTerm{TopologyKey: key(), LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{key(): value()},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key(), Operator: mostly(r, []metav1.LabelSelectorOperator{metav1.LabelSelectorOpIn, metav1.LabelSelectorOpExists}, []metav1.LabelSelectorOperator{"Near"}), Values: []string{value()}}}}}
		if r.IntN(2) == 0 {
			term.Namespaces = []string{mostly(r, []string{"kubevirt", "default"}, []string{"Kube_System", "a.b"})}
		}
		p.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: mostly(r, []int32{1, 50, 100}, []int32{0, 101, -1}), PodAffinityTerm: term}}}}
	}
	return p
}

// randomSpec is a spec biased to the values review 4's F10 found admitted and
// then refused by the strategy Job or the API server.
func randomSpec(r *rand.Rand) v1.KubeVirtSpec {
	s := v1.KubeVirtSpec{ImageTag: pick(r, "", "v1.9.0", "v1.8.4", "v1.9.1-rc.1")}
	name := func() string {
		return mostly(r, []string{"", "", "monitoring", "openshift-monitoring", "prometheus-k8s"}, []string{"Monitoring_NS", "a.b", "prometheus/k8s", "-x", strings.Repeat("n", 64)})
	}
	s.MonitorNamespace, s.ServiceMonitorNamespace, s.MonitorAccount = name(), name(), name()
	if r.IntN(2) == 0 {
		s.Infra = &v1.ComponentConfig{NodePlacement: randomPlacement(r)}
	}
	if r.IntN(2) == 0 {
		s.Workloads = &v1.ComponentConfig{NodePlacement: randomPlacement(r)}
	}
	if r.IntN(3) == 0 {
		s.CustomizeComponents.Patches = []v1.CustomizeComponentsPatch{pick(r,
			v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: "*", Type: v1.MergePatchType, Patch: `{"metadata":{"labels":{"team":"virt"}}}`},
			v1.CustomizeComponentsPatch{ResourceType: "DaemonSet", ResourceName: "virt-handler", Type: v1.StrategicMergePatchType,
				Patch: `{"spec":{"template":{"spec":{"tolerations":[{"key":"k","operator":"` + pick(r, "Exists", "Sometimes") + `"}]}}}}`},
			v1.CustomizeComponentsPatch{ResourceType: "*", ResourceName: "*", Type: v1.MergePatchType, Patch: `{"metadata":{"annotations":{"` + pick(r, "a", "a b") + `":"x"}}}`},
		)}
	}
	return s
}

// Every spec the webhook admits renders as the strategy Job renders it (with
// monitoring, in each namespace the Job may find it) and customizes as the
// operator customizes it: the specs of review 4's F10 were admitted, then
// refused by the Job (forever) or by the API server.
func TestAdmittedSpecsRender(t *testing.T) {
	r, _ := seed(t)
	v := validator()
	admitted := 0
	for i := range 80 {
		spec := randomSpec(r)
		kv := kubeVirt(func(kv *v1.KubeVirt) { kv.Spec = spec })
		if !v.Create(t.Context(), kv, nil).Allowed {
			continue
		}
		admitted++
		cfg, err := deployid.FromKubeVirt(kv, v.env())
		if err != nil {
			t.Fatalf("spec %d admitted, its config is refused: %v", i, err)
		}
		if _, builtin := release.Lookup(cfg.KubeVirtVersion); !builtin {
			continue
		}
		for _, ns := range cfg.PotentialMonitorNamespaces() {
			s, err := generate.Generate(generate.Input{Config: cfg, MonitorNamespace: ns})
			if err != nil {
				t.Fatalf("spec %d admitted, the strategy Job would fail (monitoring in %s): %v\n%s", i, ns, err, specJSON(spec))
			}
			prepared, err := apply.Prepare(s, cfg)
			if err == nil {
				err = rendered(prepared)
			}
			if err != nil {
				t.Fatalf("spec %d admitted, the operator would refuse it: %v\n%s", i, err, specJSON(spec))
			}
		}
	}
	t.Logf("%d of 80 specs admitted", admitted)
	if admitted == 0 {
		t.Error("no spec admitted: the generator tests nothing")
	}
}

func specJSON(s v1.KubeVirtSpec) string {
	raw, _ := json.Marshal(s)
	return string(raw)
}

// patchGen makes random json patches of a Deployment or DaemonSet that apply:
// copies of its subtrees into scratch keys (also into each other, nested, so
// that the object doubles), moves and removals of what the patch wrote,
// additions of random values, many operations.
type patchGen struct {
	r *rand.Rand
	// scratch are the paths the patch has written so far, and whether each
	// holds an object (then a key can be written below it).
	scratch map[string]bool
}

// roots are paths every Deployment and DaemonSet has, never moved or removed.
var roots = []string{"/spec", "/spec/template", "/spec/template/spec", "/spec/template/spec/containers/0", "/metadata", "/spec/template/metadata/annotations"}

func (g *patchGen) value(depth int) any {
	switch g.r.IntN(6) {
	case 0:
		return strings.Repeat("v", pick(g.r, 1, 100, 4<<10, 64<<10, 512<<10))
	case 1:
		if depth > 3 {
			return 1
		}
		l := make([]any, g.r.IntN(20))
		for i := range l {
			l[i] = g.value(depth + 1)
		}
		return l
	case 2:
		if depth > 3 {
			return true
		}
		m := map[string]any{}
		for i := range g.r.IntN(10) {
			m[fmt.Sprintf("k%d", i)] = g.value(depth + 1)
		}
		return m
	default:
		return g.r.IntN(1000)
	}
}

// written picks a path the patch wrote, "" when there is none.
func (g *patchGen) written() string {
	if len(g.scratch) == 0 {
		return ""
	}
	paths := make([]string, 0, len(g.scratch))
	for p := range g.scratch {
		paths = append(paths, p)
	}
	sort.Strings(paths) // map order is not the seed's
	return pick(g.r, paths...)
}

func (g *patchGen) from() string {
	if w := g.written(); w != "" && g.r.IntN(3) == 0 {
		return w
	}
	return pick(g.r, roots...)
}

// to is a new path: a scratch key, or one below a scratch object.
func (g *patchGen) to(object bool) string {
	parent := "/spec/template/metadata/annotations"
	if w := g.written(); w != "" && g.scratch[w] && g.r.IntN(2) == 0 {
		parent = w
	}
	p := fmt.Sprintf("%s/x%d", parent, g.r.IntN(1<<20))
	g.scratch[p] = object
	return p
}

// drop forgets p and every path below it.
func (g *patchGen) drop(p string) {
	for w := range g.scratch {
		if w == p || strings.HasPrefix(w, p+"/") {
			delete(g.scratch, w)
		}
	}
}

func (g *patchGen) jsonPatch() string {
	g.scratch = map[string]bool{}
	ops := []string{`{"op":"add","path":"/spec/template/metadata/annotations","value":{}}`}
	size := len(ops[0])
	for range pick(g.r, 5, 20, 60, 400) {
		var op map[string]any
		switch w := g.written(); {
		case g.r.IntN(10) < 5 || w == "":
			from := g.from()
			object, written := g.scratch[from]
			op = map[string]any{"op": "copy", "from": from, "path": g.to(object || !written)} // the roots are objects
		case g.r.IntN(5) < 2:
			v := g.value(0)
			_, object := v.(map[string]any)
			op = map[string]any{"op": pick(g.r, "add", "replace"), "path": g.to(object), "value": v}
			if op["op"] == "replace" {
				op["op"] = "add" // a new path: replace needs one that exists
			}
		case g.r.IntN(2) == 0:
			object := g.scratch[w]
			g.drop(w)
			op = map[string]any{"op": "move", "from": w, "path": g.to(object)}
		default:
			g.drop(w)
			op = map[string]any{"op": "remove", "path": w}
		}
		raw, _ := json.Marshal(op)
		if size += len(raw) + 1; size > apply.MaxPatchesBytes {
			break // as much as the API server lets a KubeVirt hold, at most
		}
		ops = append(ops, string(raw))
	}
	return "[" + strings.Join(ops, ",") + "]"
}

func (g *patchGen) patch() v1.CustomizeComponentsPatch {
	p := v1.CustomizeComponentsPatch{Type: v1.JSONPatchType,
		ResourceType: pick(g.r, "Deployment", "DaemonSet"), ResourceName: pick(g.r, "*", "virt-api", "virt-handler")}
	if g.r.IntN(4) == 0 {
		p.Type, p.ResourceType = pick(g.r, v1.MergePatchType, v1.StrategicMergePatchType), pick(g.r, "Deployment", "DaemonSet", "*")
		for {
			raw, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{"a": g.value(0)}}, "spec": g.value(1)})
			if p.Patch = string(raw); len(raw) <= apply.MaxPatchesBytes {
				return p
			}
		}
	}
	p.Patch = g.jsonPatch()
	return p
}

// heapBudget is how much heap a dry run may take over what was in use
// before it: a render takes 28 MB (7 MB of it kept), the limits a few more.
const heapBudget = 64 << 20

// Random patches through the webhook never take more than heapBudget of
// memory: copies into themselves, nested, many operations, big values,
// wildcards. Without the limits 14 copies of 1.1 KB took 770 MiB. The heap is
// read around each call and sampled during it; the collector runs at 25% so
// that garbage not yet collected is not counted as memory the call takes. A
// call that passes four times the budget stops the test at once, naming its
// seed, before it takes the machine's memory.
func TestDryRunMemoryIsBounded(t *testing.T) {
	r, s := seed(t)
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	v := validator()
	gen := &patchGen{r: r}
	old := kubeVirt(nil)
	worst := uint64(0)
	for i := range 20 {
		kv := kubeVirt(func(kv *v1.KubeVirt) {
			text := 0
			for range 1 + r.IntN(3) {
				p := gen.patch()
				if text += len(p.Patch); text > apply.MaxPatchesBytes && text > len(p.Patch) {
					break // as much as the API server lets a KubeVirt hold
				}
				kv.Spec.CustomizeComponents.Patches = append(kv.Spec.CustomizeComponents.Patches, p)
			}
		})
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		peak := sampleHeap(func() { v.Update(t.Context(), old, kv) }, base+4*heapBudget, func(over uint64) {
			panic(fmt.Sprintf("call %d took %d MiB of heap, over 4 times the budget: stopped; run again with TEST_SEED=%d", i, (over-base)>>20, s))
		})
		over := uint64(0)
		if peak > base {
			over = peak - base
		}
		worst = max(worst, over)
		if over > heapBudget {
			t.Errorf("call %d took %d MiB of heap, over the budget of %d MiB; patches of %d bytes", i, over>>20, heapBudget>>20, len(specJSON(kv.Spec)))
		}
	}
	t.Logf("the most heap a call took: %d MiB", worst>>20)
}

// sampleHeap runs f and returns the most heap in use while it ran, read every
// millisecond and once after; past limit it calls tooMuch from the sampler.
func sampleHeap(f func(), limit uint64, tooMuch func(uint64)) uint64 {
	var (
		mu   sync.Mutex
		peak uint64
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	read := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mu.Lock()
		peak = max(peak, ms.HeapAlloc)
		mu.Unlock()
		if ms.HeapAlloc > limit {
			tooMuch(ms.HeapAlloc)
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				read()
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	read()
	return peak
}
