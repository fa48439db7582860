package apply

import (
	"crypto/sha1" //nolint:gosec // upstream's customizer identifier
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

func patches(ps ...v1.CustomizeComponentsPatch) func(*v1.KubeVirtSpec) {
	return func(s *v1.KubeVirtSpec) { s.CustomizeComponents.Patches = ps }
}

func TestCustomizePatches(t *testing.T) {
	tests := []struct {
		name  string
		patch []v1.CustomizeComponentsPatch
		check func(t *testing.T, s *strategy.Strategy)
	}{
		{"json patch on one Deployment",
			[]v1.CustomizeComponentsPatch{{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.JSONPatchType,
				Patch: `[{"op":"replace","path":"/spec/replicas","value":5}]`}},
			func(t *testing.T, s *strategy.Strategy) {
				wantReplicas(t, s, VirtAPI, 5)
				wantReplicas(t, s, VirtController, 2)
			}},
		{"merge patch on a Service, kind and name case-insensitive",
			[]v1.CustomizeComponentsPatch{{ResourceType: "service", ResourceName: "VIRT-API", Type: v1.MergePatchType,
				Patch: `{"metadata":{"labels":{"team":"x"}}}`}},
			func(t *testing.T, s *strategy.Strategy) {
				if got := find[*corev1.Service](t, s, "Service", "virt-api").Labels["team"]; got != "x" {
					t.Errorf("service label = %q", got)
				}
			}},
		{"strategic patch merges containers by name",
			[]v1.CustomizeComponentsPatch{{ResourceType: "Deployment", ResourceName: "virt-controller", Type: v1.StrategicMergePatchType,
				Patch: `{"spec":{"template":{"spec":{"containers":[{"name":"virt-controller","env":[{"name":"A","value":"1"}]}]}}}}`}},
			func(t *testing.T, s *strategy.Strategy) {
				c := find[*appsv1.Deployment](t, s, "Deployment", VirtController).Spec.Template.Spec.Containers
				if len(c) != 1 || c[0].Image == "" || len(c[0].Env) != 1 || c[0].Env[0].Name != "A" {
					t.Errorf("containers = %+v", c)
				}
			}},
		{"wildcard name hits every object of the kind",
			[]v1.CustomizeComponentsPatch{{ResourceType: "Deployment", ResourceName: "*", Type: v1.MergePatchType, Patch: `{"spec":{"replicas":3}}`}},
			func(t *testing.T, s *strategy.Strategy) {
				for _, d := range s.Deployments {
					wantReplicas(t, s, d.Name, 3)
				}
			}},
		{"wildcard type hits every patchable kind of the name",
			[]v1.CustomizeComponentsPatch{{ResourceType: "*", ResourceName: "virt-api", Type: v1.MergePatchType, Patch: `{"metadata":{"labels":{"w":"1"}}}`}},
			func(t *testing.T, s *strategy.Strategy) {
				if find[*corev1.Service](t, s, "Service", "virt-api").Labels["w"] != "1" ||
					find[*appsv1.Deployment](t, s, "Deployment", "virt-api").Labels["w"] != "1" {
					t.Error("wildcard type missed the Service or the Deployment")
				}
			}},
		{"kinds that are not patchable are left alone",
			[]v1.CustomizeComponentsPatch{{ResourceType: "*", ResourceName: "*", Type: v1.MergePatchType, Patch: `{"metadata":{"labels":{"w":"1"}}}`}},
			func(t *testing.T, s *strategy.Strategy) {
				if _, ok := find[*rbacv1.ClusterRole](t, s, "ClusterRole", "kubevirt-apiserver").Labels["w"]; ok {
					t.Error("a ClusterRole was patched")
				}
			}},
		{"patches apply in list order, not by length",
			[]v1.CustomizeComponentsPatch{
				{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.JSONPatchType, Patch: `[{"op": "replace", "path": "/spec/replicas", "value": 7}]`},
				{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.MergePatchType, Patch: `{"spec":{"replicas":4}}`},
			},
			func(t *testing.T, s *strategy.Strategy) { wantReplicas(t, s, VirtAPI, 4) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testStrategy(t)
			before := snapshot(t, in)
			out, err := Customize(in, testConfig(t, patches(tt.patch...)))
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, out)
			if snapshot(t, in) != before {
				t.Error("the input strategy was modified")
			}
		})
	}
}

func wantReplicas(t *testing.T, s *strategy.Strategy, name string, want int32) {
	t.Helper()
	if got := find[*appsv1.Deployment](t, s, "Deployment", name).Spec.Replicas; got == nil || *got != want {
		t.Errorf("%s replicas = %v, want %d", name, got, want)
	}
}

func TestCustomizeBadPatch(t *testing.T) {
	tests := []struct {
		name, wantIn string
		patch        v1.CustomizeComponentsPatch
		wantObject   bool
	}{
		{"json replace of a missing path", "virt-api",
			v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.JSONPatchType, Patch: `[{"op":"replace","path":"/spec/nope/x","value":1}]`}, true},
		{"malformed json patch", "patches[0]",
			v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.JSONPatchType, Patch: `{"op":"add"}`}, false},
		{"merge patch that is not JSON", "not valid JSON",
			v1.CustomizeComponentsPatch{ResourceType: "Service", ResourceName: "*", Type: v1.MergePatchType, Patch: `{spec`}, false},
		{"unknown type", "unknown patch type",
			v1.CustomizeComponentsPatch{ResourceType: "Service", ResourceName: "*", Type: "yaml", Patch: `{}`}, false},
		{"unknown field", "nodeSelectr",
			v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: "virt-controller", Type: v1.StrategicMergePatchType, Patch: `{"spec":{"template":{"spec":{"nodeSelectr":{"a":"b"}}}}}`}, true},
		{"wrong value type", "virt-api",
			v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.MergePatchType, Patch: `{"spec":{"replicas":"many"}}`}, true},
		{"renaming the object", "name",
			v1.CustomizeComponentsPatch{ResourceType: "Service", ResourceName: "virt-api", Type: v1.MergePatchType, Patch: `{"metadata":{"name":"other"}}`}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testStrategy(t)
			before := snapshot(t, in)
			cfg := testConfig(t, nil) // set after validation, which rejects unknown types
			cfg.CustomizeComponents = &v1.CustomizeComponents{Patches: []v1.CustomizeComponentsPatch{tt.patch}}
			out, err := Customize(in, cfg)
			var pe *PatchError
			if !errors.As(err, &pe) || out != nil {
				t.Fatalf("Customize = %v, %v; want a *PatchError", out, err)
			}
			if pe.Patch != tt.patch || (pe.Object.Name != "") != tt.wantObject {
				t.Errorf("PatchError = %+v", pe)
			}
			msg := err.Error()
			t.Log(msg)
			for _, want := range []string{tt.wantIn, "resourceType " + tt.patch.ResourceType, "type " + string(tt.patch.Type)} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not mention %q", msg, want)
				}
			}
			if snapshot(t, in) != before {
				t.Error("the input strategy was modified")
			}
		})
	}
}

func TestCustomizeFlagsAndPlacement(t *testing.T) {
	affinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "infra", Operator: corev1.NodeSelectorOpExists}}}}}}}
	cfg := testConfig(t, func(s *v1.KubeVirtSpec) {
		s.CustomizeComponents.Flags = &v1.Flags{API: map[string]string{"V": "4", "debug": "", "Trace": "TRUE"}, Handler: map[string]string{"x": "/Path/A"}}
		s.Infra = &v1.ComponentConfig{Replicas: ptr.To(uint8(3)), NodePlacement: &v1.NodePlacement{
			NodeSelector: map[string]string{"infra": "yes", "kubernetes.io/os": "other"}, Affinity: affinity,
			Tolerations: []corev1.Toleration{{Key: "infra", Operator: corev1.TolerationOpExists}}}}
		s.Workloads = &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{NodeSelector: map[string]string{"workload": "yes"}}}
	})
	out, err := Customize(testStrategy(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	api := find[*appsv1.Deployment](t, out, "Deployment", VirtAPI)
	if got, want := api.Spec.Template.Spec.Containers[0].Command, []string{"virt-api", "--debug", "--trace=true", "--v", "4"}; !reflect.DeepEqual(got, want) {
		t.Errorf("virt-api command = %q, want %q", got, want)
	}
	handler := find[*appsv1.DaemonSet](t, out, "DaemonSet", VirtHandler)
	if got := handler.Spec.Template.Spec.Containers[0].Command; !reflect.DeepEqual(got, []string{"virt-handler", "--x", "/Path/A"}) {
		t.Errorf("virt-handler command = %q", got)
	}
	if got := find[*appsv1.Deployment](t, out, "Deployment", VirtController).Spec.Template.Spec.Containers[0].Command; !reflect.DeepEqual(got, []string{"virt-controller"}) {
		t.Errorf("virt-controller command changed without flags: %q", got)
	}
	for _, name := range []string{VirtAPI, VirtController, VirtExportProxy, VirtSynchronizationController} {
		spec := find[*appsv1.Deployment](t, out, "Deployment", name).Spec
		ps := spec.Template.Spec
		// The pod's own selector wins on a shared key (its kubernetes.io/os), as upstream.
		if *spec.Replicas != 3 || ps.NodeSelector["infra"] != "yes" || ps.NodeSelector["kubernetes.io/os"] != "linux" ||
			!equality.Semantic.DeepEqual(ps.Affinity, affinity) || len(ps.Tolerations) != 2 || ps.Tolerations[1].Key != "infra" {
			t.Errorf("%s: replicas %d, placement %+v", name, *spec.Replicas, ps)
		}
	}
	// As upstream: infra placement reaches every Deployment, its replicas all but virt-template's.
	if other := find[*appsv1.Deployment](t, out, "Deployment", "virt-template-controller"); other.Spec.Template.Spec.NodeSelector["infra"] != "yes" || *other.Spec.Replicas != 2 {
		t.Errorf("virt-template: placement %v, replicas %d", other.Spec.Template.Spec.NodeSelector, *other.Spec.Replicas)
	}
	if ps := handler.Spec.Template.Spec; ps.NodeSelector["workload"] != "yes" || ps.NodeSelector["infra"] != "" || ps.NodeSelector["kubernetes.io/os"] != "linux" {
		t.Errorf("virt-handler placement = %+v", ps.NodeSelector)
	}
}

// Without a placement, the control plane goes to control-plane nodes and every pod
// to Linux nodes (upstream's defaults); the pod's own selectors and terms stay.
func TestDefaultPlacement(t *testing.T) {
	out, err := Customize(testStrategy(t), testConfig(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	api := find[*appsv1.Deployment](t, out, "Deployment", VirtAPI).Spec.Template.Spec
	req := api.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(req) != 2 || req[0].MatchExpressions[0].Key != "node-role.kubernetes.io/control-plane" || req[1].MatchExpressions[0].Key != "node-role.kubernetes.io/master" {
		t.Errorf("virt-api's required node affinity: %+v", req)
	}
	if api.NodeSelector["kubernetes.io/os"] != "linux" || len(api.Tolerations) != 3 {
		t.Errorf("virt-api: selector %v, tolerations %v", api.NodeSelector, api.Tolerations)
	}
	handler := find[*appsv1.DaemonSet](t, out, "DaemonSet", VirtHandler).Spec.Template.Spec
	if handler.Affinity != nil || handler.NodeSelector["kubernetes.io/os"] != "linux" {
		t.Errorf("virt-handler: affinity %v, selector %v", handler.Affinity, handler.NodeSelector)
	}

	spec := &corev1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/os": "windows"},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "own", Operator: corev1.NodeSelectorOpExists}}}}}}}}
	InjectPlacement(spec, nil, ControlPlane)
	if spec.NodeSelector["kubernetes.io/os"] != "windows" || len(spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) != 3 {
		t.Errorf("the pod's own placement must stay and be added to: %+v", spec)
	}
}

func TestCustomizeFlagsWithoutContainer(t *testing.T) {
	s := testStrategy(t)
	s.Deployments[0].Spec.Template.Spec.Containers[0].Name = "renamed"
	_, err := Customize(s, testConfig(t, func(s *v1.KubeVirtSpec) {
		s.CustomizeComponents.Flags = &v1.Flags{API: map[string]string{"v": "2"}}
	}))
	var pe *PatchError
	if !errors.As(err, &pe) || pe.Source != "customizeComponents.flags.api" {
		t.Fatalf("err = %v", err)
	}
}

func TestCustomizerIdentifier(t *testing.T) {
	plain, err := Customize(testStrategy(t), testConfig(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	patched, err := Customize(testStrategy(t), testConfig(t, patches(v1.CustomizeComponentsPatch{
		ResourceType: "Secret", ResourceName: "none", Type: v1.MergePatchType, Patch: `{}`})))
	if err != nil {
		t.Fatal(err)
	}
	id := func(s *strategy.Strategy, kind, name string) string {
		for _, o := range s.Objects() {
			if kindOf(o) == kind && o.GetName() == name {
				return o.GetAnnotations()[metadata.CustomizerIdentifierAnnotation]
			}
		}
		return "<absent>"
	}
	a, b := id(plain, "Deployment", VirtAPI), id(patched, "Deployment", VirtAPI)
	if a == "" || b == "" || a == b {
		t.Errorf("customizer ids %q, %q: want set and different", a, b)
	}
	if id(plain, "Service", "virt-api") != a || id(plain, "DaemonSet", VirtHandler) != a {
		t.Error("patchable kinds disagree on the identifier")
	}
	if got := id(plain, "ClusterRole", "kubevirt-apiserver"); got != "" {
		t.Errorf("ClusterRole carries the identifier %q", got)
	}
}

// The identifier is upstream's (its apply.getHash): the hex SHA-1 of the
// customization's JSON, patches stably sorted by the length of their document;
// none is sha1("{}"). The expected JSON is written out, so a field renamed or
// reordered in the API type fails here.
func TestCustomizerHashIsUpstreams(t *testing.T) {
	sha := func(s string) string {
		sum := sha1.Sum([]byte(s)) //nolint:gosec
		return hex.EncodeToString(sum[:])
	}
	hash := func(cc *v1.CustomizeComponents) string {
		t.Helper()
		h, err := CustomizerHash(cc)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if got := hash(nil); got != "bf21a9e8fbc5a3846fb05b4fa0859e0917b2202f" || got != sha("{}") || hash(&v1.CustomizeComponents{}) != got {
		t.Errorf("no customization hashes as %s, want sha1({}) bf21a9e8fbc5a3846fb05b4fa0859e0917b2202f", got)
	}
	long := v1.CustomizeComponentsPatch{ResourceName: "virt-api", ResourceType: "Deployment", Patch: `{"metadata":{"labels":{"a":"b"}}}`, Type: v1.StrategicMergePatchType}
	short := v1.CustomizeComponentsPatch{ResourceName: "*", ResourceType: "Service", Patch: `[]`, Type: v1.JSONPatchType}
	short2 := v1.CustomizeComponentsPatch{ResourceName: "x", ResourceType: "Secret", Patch: `{}`, Type: v1.MergePatchType}
	cc := &v1.CustomizeComponents{Patches: []v1.CustomizeComponentsPatch{long, short, short2}, Flags: &v1.Flags{API: map[string]string{"v": "2"}}}
	want := sha(`{"patches":[` +
		`{"resourceName":"*","resourceType":"Service","patch":"[]","type":"json"},` +
		`{"resourceName":"x","resourceType":"Secret","patch":"{}","type":"merge"},` +
		`{"resourceName":"virt-api","resourceType":"Deployment","patch":"{\"metadata\":{\"labels\":{\"a\":\"b\"}}}","type":"strategic"}` +
		`],"flags":{"api":{"v":"2"}}}`)
	if got := hash(cc); got != want {
		t.Errorf("hash %s, want %s (patches by length, stable)", got, want)
	}
	if cc.Patches[0] != long {
		t.Error("hashing reordered the config's patches")
	}
}

func TestFlagCommand(t *testing.T) {
	tests := []struct {
		flags map[string]string
		want  []string
	}{
		{nil, []string{"bin"}},
		{map[string]string{"b": "", "A": "x"}, []string{"bin", "--a", "x", "--b"}},
		{map[string]string{"on": "True", "off": "false"}, []string{"bin", "--off=false", "--on=true"}},
		{map[string]string{"url": "HTTP://Host/A"}, []string{"bin", "--url", "HTTP://Host/A"}},
	}
	for _, tt := range tests {
		if got := FlagCommand("bin", tt.flags); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("FlagCommand(%v) = %q, want %q", tt.flags, got, tt.want)
		}
	}
}

func TestDesiredInjectsMetadata(t *testing.T) {
	cfg := testConfig(t, nil)
	out := Desired(testStrategy(t), cfg)
	target := metadata.TargetOf(cfg)
	for _, o := range out.Objects() {
		if !metadata.IsManaged(o) || !metadata.IsUpToDate(o, target) {
			t.Errorf("%s lacks the operator metadata: %v %v", RefOf(o), o.GetLabels(), o.GetAnnotations())
		}
		if tmpl := PodTemplate(o); tmpl != nil && !metadata.IsUpToDate(tmpl, target) {
			t.Errorf("%s pod template lacks the target annotations", RefOf(o))
		}
	}
}

// Customize owns customization: Desired after it must not apply the patches or
// the placement a second time (an "add .../args/-" would give the flag twice, a
// "remove" would fail, tolerations would be doubled).
func TestCustomizeThenDesiredCustomizesOnce(t *testing.T) {
	cfg := testConfig(t, func(s *v1.KubeVirtSpec) {
		patches(
			v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: VirtAPI, Type: v1.JSONPatchType,
				Patch: `[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--extra"}]`},
			v1.CustomizeComponentsPatch{ResourceType: "Deployment", ResourceName: VirtController, Type: v1.JSONPatchType,
				Patch: `[{"op":"remove","path":"/spec/template/spec/containers/0/livenessProbe"}]`},
		)(s)
		s.Infra = &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{
			Tolerations: []corev1.Toleration{{Key: "infra", Operator: corev1.TolerationOpExists}}}}
	})
	s := testStrategy(t)
	for _, name := range []string{VirtAPI, VirtController} {
		c := &find[*appsv1.Deployment](t, s, "Deployment", name).Spec.Template.Spec.Containers[0]
		c.Args = []string{"--port", "8443"}
		c.LivenessProbe = &corev1.Probe{InitialDelaySeconds: 15}
	}
	customized, err := Customize(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := Desired(customized, cfg)
	api := find[*appsv1.Deployment](t, out, "Deployment", VirtAPI).Spec.Template.Spec
	if n := strings.Count(strings.Join(api.Containers[0].Args, " "), "--extra"); n != 1 {
		t.Errorf("virt-api args %v: --extra %d times, want once", api.Containers[0].Args, n)
	}
	infra := 0
	for _, tol := range api.Tolerations {
		if tol.Key == "infra" {
			infra++
		}
	}
	if infra != 1 {
		t.Errorf("virt-api tolerations %v: the infra one %d times, want once", api.Tolerations, infra)
	}
	if p := find[*appsv1.Deployment](t, out, "Deployment", VirtController).Spec.Template.Spec.Containers[0].LivenessProbe; p != nil {
		t.Errorf("virt-controller still has a livenessProbe: %+v", p)
	}
}
