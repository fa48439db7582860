package integration

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/config/manager"
	"github.com/virt-operator/virt-operator/internal/admission"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy/dump"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

// The CRD refuses the status timestamps metav1.Time cannot decode, and the
// int-or-string counts an int32 cannot hold, naming the field: one such write
// made every list of KubeVirts fail to decode in the operator (review 4 F12).
// What it accepts, the operator's client decodes.
func TestKubeVirtCRDRefusesWhatGoCannotDecode(t *testing.T) {
	ctx := t.Context()
	ns := createNamespace(t, ctx, "undecodable-status")
	kv := kubeVirtFromYAML(t, ns, `{imageTag: v1.9.0}`)
	if err := k8s.Create(ctx, kv); err != nil {
		t.Fatal(err)
	}
	status := func(field, value string) error {
		raw, _ := json.Marshal(map[string]any{"status": map[string]any{"handlerRollout": map[string]any{field: value}}})
		return k8s.Status().Patch(ctx, kv.DeepCopy(), client.RawPatch(types.MergePatchType, raw))
	}
	for _, bad := range []string{"2026-12-02t12:00:00z", "2026-12-02T12:00:00x5Z", "2026-12-02T12:00:00.5z", "2026-12-02T12:00:00+99:99", "2026-12-02T12:00:00,5Z"} {
		err := status("startedAt", bad)
		if err == nil || !strings.Contains(err.Error(), "status.handlerRollout.startedAt") {
			t.Errorf("startedAt %q: %v", bad, err)
		}
	}
	for _, good := range []string{"2026-12-02T12:00:00Z", "2026-12-02T12:00:00.5+01:00"} {
		if err := status("phaseChangeAt", good); err != nil {
			t.Errorf("phaseChangeAt %q refused: %v", good, err)
		}
	}
	for _, c := range []struct{ spec, field string }{
		{`handlerRollout: {fastStep: 2147483648}`, "spec.handlerRollout.fastStep"},
		{`handlerRollout: {maxCrashing: -1}`, "spec.handlerRollout.maxCrashing"},
	} {
		if err := patchSpec(ctx, kv, c.spec); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: %v", c.spec, err)
		}
	}
	if err := patchSpec(ctx, kv, `handlerRollout: {fastStep: 2147483647, maxCrashing: 0}`); err != nil {
		t.Errorf("the largest counts refused: %v", err)
	}
	if err := k8s.List(ctx, &v1.KubeVirtList{}); err != nil {
		t.Errorf("the KubeVirt list does not decode: %v", err)
	}
}

// A patch over the limits stored before the webhook existed does not take the
// operator's memory on every pass: the controller reports it as an invalid
// customization (review 4 F3: 14 copies of 1.1 KB took 770 MiB).
func TestAStoredPatchOverTheLimitsIsAnInvalidCustomization(t *testing.T) {
	ctx := t.Context()
	ns := createNamespace(t, ctx, "copy-bomb")
	ops := []string{`{"op":"add","path":"/spec/template/metadata/annotations","value":{}}`}
	for i := range 14 {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/spec","path":"/spec/template/metadata/annotations/x%d"}`, i))
	}
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: ns}}
	kv.Spec.ImageTag = "v1.9.0"
	kv.Spec.CustomizeComponents.Patches = []v1.CustomizeComponentsPatch{{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.JSONPatchType, Patch: "[" + strings.Join(ops, ",") + "]"}}
	if err := k8s.Create(ctx, kv); err != nil { // no webhook serves this namespace
		t.Fatal(err)
	}
	// The strategy of its deployment config, as its Job would store it.
	cfg, err := deployid.FromKubeVirt(kv, deployid.OSEnv{})
	if err != nil {
		t.Fatal(err)
	}
	if err := runDump(t, ctx, deployid.MapEnv{dump.ConfigEnv: cfg.UpstreamJSON()}); err != nil {
		t.Fatal(err)
	}
	runOperator(t, ns)
	waitFor(t, ctx, kv, "Degraded for the invalid customization", func(kv *v1.KubeVirt) bool {
		for _, c := range kv.Status.Conditions {
			if c.Type == v1.KubeVirtConditionDegraded && c.Status == "True" && c.Reason == "InvalidCustomization" &&
				strings.Contains(c.Message, "customizeComponents.patches[0]") && strings.Contains(c.Message, "copy operations add more than the limit of 3 MiB") {
				return true
			}
		}
		return false
	})
}

// The webhook's check of a nodePlacement agrees with the API server's
// validation of a pod template carrying it: what the webhook admits, the API
// server takes in the components' Deployments (the specs of review 4 F10 were
// admitted, then refused on every write); what it refuses, the API server
// refuses too, so no valid placement is lost.
func TestPlacementChecksAgreeWithTheAPIServer(t *testing.T) {
	ctx := t.Context()
	ns := createNamespace(t, ctx, "placement")
	validator := &admission.Validator{Env: deployid.MapEnv{}}
	r := rand.New(rand.NewPCG(2026, 12))
	placements := placementCases()
	for range 60 {
		placements = append(placements, randomPlacement(r, 2))
	}
	agreed := map[bool]int{}
	for i, p := range placements {
		kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: ns}}
		kv.Spec.Infra = &v1.ComponentConfig{NodePlacement: p}
		verdict := validator.Create(ctx, kv, nil)
		refused := !verdict.Allowed && strings.Contains(verdict.Message, "spec.infra.nodePlacement")
		if !verdict.Allowed && !refused {
			t.Fatalf("placement %d refused for another reason: %s", i, verdict.Message)
		}
		d := placedDeployment(ns, fmt.Sprintf("p%d", i), p)
		err := k8s.Create(ctx, d, client.DryRunAll)
		if (err != nil) != refused {
			raw, _ := json.Marshal(p)
			t.Errorf("placement %d %s: the webhook refuses: %v (%s); the API server refuses: %v", i, raw, refused, verdict.Message, err)
		}
		agreed[refused]++
	}
	t.Logf("%d placements refused by both, %d admitted by both", agreed[true], agreed[false])
}

func placedDeployment(ns, name string, p *v1.NodePlacement) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
					NodeSelector: p.NodeSelector, Tolerations: p.Tolerations, Affinity: p.Affinity}}}}
}

func nodeTerm(rq ...corev1.NodeSelectorRequirement) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: rq}}}}}
}

// placementCases are the edges of each rule the webhook checks.
func placementCases() []*v1.NodePlacement {
	tol := func(ts ...corev1.Toleration) *v1.NodePlacement { return &v1.NodePlacement{Tolerations: ts} }
	aff := func(a *corev1.Affinity) *v1.NodePlacement { return &v1.NodePlacement{Affinity: a} }
	podTerm := func(term corev1.PodAffinityTerm) *v1.NodePlacement {
		return aff(&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}})
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
	return []*v1.NodePlacement{
		{NodeSelector: map[string]string{"node role!": "x"}},
		{NodeSelector: map[string]string{"role": "a b"}},
		{NodeSelector: map[string]string{"example.com/role": "", "kubernetes.io/os": "linux"}},
		tol(corev1.Toleration{Key: "k", Operator: "Sometimes"}),
		tol(corev1.Toleration{Operator: corev1.TolerationOpEqual, Value: "v"}),
		tol(corev1.Toleration{Operator: corev1.TolerationOpExists}),
		tol(corev1.Toleration{Key: "a/b/c", Operator: corev1.TolerationOpExists}),
		tol(corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}),
		tol(corev1.Toleration{Key: "k", Value: "a b"}),
		tol(corev1.Toleration{Key: "k", Value: "v", Effect: "NoScheduleEver"}),
		tol(corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptr.To[int64](5)}),
		tol(corev1.Toleration{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)}),
		aff(&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}),
		aff(nodeTerm(corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn})),
		aff(nodeTerm(corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpExists, Values: []string{"a"}})),
		aff(nodeTerm(corev1.NodeSelectorRequirement{Key: "zone", Operator: "Near", Values: []string{"a"}})),
		aff(nodeTerm(corev1.NodeSelectorRequirement{Key: "cpus", Operator: corev1.NodeSelectorOpGt, Values: []string{"4", "5"}})),
		aff(nodeTerm(corev1.NodeSelectorRequirement{Key: "cpus", Operator: corev1.NodeSelectorOpGt, Values: []string{"4"}})),
		aff(nodeTerm(corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a b"}})),
		aff(&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1", "node-2"}}}}}}}}),
		aff(&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "spec.unschedulable", Operator: corev1.NodeSelectorOpIn, Values: []string{"false"}}}}}}}}),
		aff(&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 0,
			Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}}}}}}}),
		aff(&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100,
			Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a b"}}}}}}}}),
		podTerm(corev1.PodAffinityTerm{LabelSelector: sel}),
		podTerm(corev1.PodAffinityTerm{LabelSelector: sel, TopologyKey: "kubernetes.io/hostname"}),
		podTerm(corev1.PodAffinityTerm{LabelSelector: sel, TopologyKey: "kubernetes.io/hostname", Namespaces: []string{"Kube_System"}}),
		podTerm(corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near", Values: []string{"x"}}}}}),
		podTerm(corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", MatchLabelKeys: []string{"pod-template-hash"}}),
		podTerm(corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", LabelSelector: sel, MatchLabelKeys: []string{"pod-template-hash"}}),
		podTerm(corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", LabelSelector: sel, MatchLabelKeys: []string{"k"}, MismatchLabelKeys: []string{"k"}}),
		podTerm(corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a b": "c"}}}),
		aff(&corev1.Affinity{PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 101,
			PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname"}}}}}),
	}
}

// randomPlacement combines the pieces of placementCases' rules at random,
// each piece one the API server refuses once in bad times.
func randomPlacement(r *rand.Rand, bad int) *v1.NodePlacement {
	pick := func(good, wrong []string) string {
		if r.IntN(bad) == 0 {
			return wrong[r.IntN(len(wrong))]
		}
		return good[r.IntN(len(good))]
	}
	key := func() string {
		return pick([]string{"zone", "example.com/gpu", "kubernetes.io/hostname"}, []string{"node role!", "a/b/c", "", "-x"})
	}
	value := func() string { return pick([]string{"", "a", "4"}, []string{"a b", "-x", strings.Repeat("v", 64)}) }
	p := &v1.NodePlacement{}
	if r.IntN(2) == 0 {
		p.NodeSelector = map[string]string{key(): value()}
	}
	for range r.IntN(3) {
		t := corev1.Toleration{Key: key(), Value: value(), Operator: corev1.TolerationOperator(pick([]string{"", "Equal", "Exists"}, []string{"Sometimes"})),
			Effect: corev1.TaintEffect(pick([]string{"", "NoSchedule", "NoExecute", "PreferNoSchedule"}, []string{"Never"}))}
		if r.IntN(3) == 0 {
			t.TolerationSeconds = ptr.To(int64(r.IntN(100)))
		}
		p.Tolerations = append(p.Tolerations, t)
	}
	if r.IntN(2) == 0 {
		rq := corev1.NodeSelectorRequirement{Key: key(), Operator: corev1.NodeSelectorOperator(pick([]string{"In", "NotIn", "Exists", "DoesNotExist", "Gt"}, []string{"Near"}))}
		for range r.IntN(3) {
			rq.Values = append(rq.Values, value())
		}
		p.Affinity = nodeTerm(rq)
	}
	return p
}

// Specs the webhook admits render into Deployments and DaemonSets the API
// server takes: the placement, labels and annotations of every component as
// the operator will write them (its customizations applied).
func TestAdmittedSpecsRenderWhatTheAPIServerTakes(t *testing.T) {
	ctx := t.Context()
	ns := createNamespace(t, ctx, "admitted")
	validator := &admission.Validator{Env: deployid.MapEnv{}}
	r := rand.New(rand.NewPCG(2026, 7))
	tried := 0
	for i := range 12 {
		// A random spec the webhook admits.
		var kv *v1.KubeVirt
		for admitted := false; !admitted; tried++ {
			kv = &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: ns}}
			kv.Spec.Infra = &v1.ComponentConfig{NodePlacement: randomPlacement(r, 8)}
			kv.Spec.Workloads = &v1.ComponentConfig{NodePlacement: randomPlacement(r, 8)}
			kv.Spec.CustomizeComponents.Patches = []v1.CustomizeComponentsPatch{{ResourceType: "*", ResourceName: "*", Type: v1.MergePatchType,
				Patch: fmt.Sprintf(`{"metadata":{"labels":{%q:%q},"annotations":{%q:"x"}}}`, randomLabel(r), randomLabel(r), randomLabel(r))}}
			admitted = validator.Create(ctx, kv, nil).Allowed
		}
		cfg, err := deployid.FromKubeVirt(kv, deployid.MapEnv{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := generate.Generate(generate.Input{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		prepared, err := apply.Prepare(s, cfg)
		if err != nil {
			t.Fatalf("spec %d admitted, Prepare refuses it: %v", i, err)
		}
		for _, o := range prepared.Objects() {
			switch o.(type) {
			case *appsv1.Deployment, *appsv1.DaemonSet:
			default:
				continue
			}
			u := &unstructured.Unstructured{}
			raw, _ := json.Marshal(o)
			if err := json.Unmarshal(raw, &u.Object); err != nil {
				t.Fatal(err)
			}
			if err := k8s.Create(ctx, u, client.DryRunAll); err != nil {
				raw, _ := json.Marshal(kv.Spec)
				t.Errorf("spec %d admitted, the API server refuses its %s %s: %v\n%s", i, u.GetKind(), u.GetName(), err, raw)
			}
		}
	}
	t.Logf("12 specs admitted of %d tried", tried)
}

func randomLabel(r *rand.Rand) string {
	if r.IntN(8) == 0 {
		return []string{"a b", "-x", strings.Repeat("l", 64)}[r.IntN(3)]
	}
	return []string{"team", "example.com/owner", "app.kubernetes.io/part-of"}[r.IntN(3)]
}

// The operator pods' NetworkPolicy (config/manager, and so the chart) is one
// the API server takes.
func TestTheOperatorsNetworkPolicyIsValid(t *testing.T) {
	ctx := t.Context()
	np, err := manager.NetworkPolicy()
	if err != nil {
		t.Fatal(err)
	}
	np.Namespace = createNamespace(t, ctx, "networkpolicy")
	if err := k8s.Create(ctx, np, client.DryRunAll); err != nil {
		t.Errorf("the API server refuses the NetworkPolicy: %v", err)
	}
}
