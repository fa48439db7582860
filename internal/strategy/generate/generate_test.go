package generate

import (
	"encoding/json"
	"errors"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"weak"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

var update = flag.Bool("update", false, "rewrite the golden inventories in testdata/")

// The inventory of each release's default strategy, as a reviewable golden file:
// every object the release installs (test/e2e/fidelity proves them field by field).
func TestInventoryPerRelease(t *testing.T) {
	for _, tc := range []struct{ golden, version, monitoring string }{
		{"inventory-v1.9-default.golden", "v1.9.0", ""},
		{"inventory-v1.9-monitoring.golden", "v1.9.0", "monitoring"},
		{"inventory-v1.8-default.golden", "v1.8.4", ""},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			s := mustGenerate(t, Input{Config: config(t, nil, tag(tc.version)), MonitorNamespace: tc.monitoring})
			var lines []string
			counts := map[string]int{}
			for _, ref := range s.Inventory() {
				if ref.Kind == "VirtualMachineClusterInstancetype" || ref.Kind == "VirtualMachineClusterPreference" {
					counts[ref.Kind]++
					continue
				}
				lines = append(lines, ref.String())
			}
			for _, k := range slices.Sorted(maps.Keys(counts)) {
				lines = append(lines, k+" x"+strconv.Itoa(counts[k]))
			}
			got := strings.Join(lines, "\n") + "\n"
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if got != string(want) {
				t.Errorf("inventory differs from %s (go test -update rewrites it):\n%s", path, got)
			}
		})
	}
}

func TestGenerateIsDeterministicAndLeavesNoPlaceholder(t *testing.T) {
	in := Input{Config: config(t, nil), MonitorNamespace: "monitoring"}
	a, b := mustGenerate(t, in), mustGenerate(t, in)
	ja, _ := json.Marshal(a.Objects())
	jb, _ := json.Marshal(b.Objects())
	if string(ja) != string(jb) {
		t.Error("two runs on the same input differ")
	}
	if strings.Contains(string(ja), "[[") {
		t.Error("a template placeholder is left in the strategy")
	}
	for _, crd := range a.CRDs {
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				t.Errorf("CRD %s version %s has no schema", crd.Name, v.Name)
			}
		}
	}
}

func TestGenerateErrors(t *testing.T) {
	good := config(t, nil)
	unknown := config(t, nil, tag("v1.7.4"))
	noNS := good.DeepCopy()
	noNS.Namespace = ""
	noID := good.DeepCopy()
	noID.ID = ""
	badServiceMonitorNS := config(t, nil, func(s *v1.KubeVirtSpec) { s.ServiceMonitorNamespace = "Monitoring_NS" })
	badAccount := config(t, nil, func(s *v1.KubeVirtSpec) { s.MonitorAccount = "prometheus/k8s" })
	for _, tc := range []struct {
		name string
		in   Input
		want string
	}{
		{"no config", Input{}, "no deployment config"},
		{"no namespace", Input{Config: noNS}, "no namespace"},
		{"no id", Input{Config: noID}, "no ID"},
		{"bad monitor namespace", Input{Config: good, MonitorNamespace: "Not_A_Namespace"}, `monitor namespace "Not_A_Namespace" is no namespace name`},
		{"bad serviceMonitorNamespace", Input{Config: badServiceMonitorNS}, `spec.serviceMonitorNamespace "Monitoring_NS" is no namespace name`},
		{"bad monitorAccount with monitoring", Input{Config: badAccount, MonitorNamespace: "monitoring"}, `spec.monitorAccount "prometheus/k8s" is no ServiceAccount name`},
		{"unknown release", Input{Config: unknown}, `KubeVirt "v1.7.4": not a KubeVirt release the builtin generator knows (it knows v1.9, v1.8)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Generate(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := Generate(Input{Config: unknown}); !errors.Is(err, ErrUnknownRelease) {
		t.Errorf("an unknown release is %v, want ErrUnknownRelease", err)
	}
}

// Each config input that shapes objects, and its effect, per release.
func TestConfigEffects(t *testing.T) {
	manual := deployid.RoleAggregationManual
	for _, tc := range []struct {
		name    string
		env     deployid.MapEnv
		edit    func(*v1.KubeVirtSpec)
		monitor string
		check   func(t *testing.T, s *strategy.Strategy)
	}{
		{name: "registry, prefix and version from a release's operator image",
			env: deployid.MapEnv{deployid.EnvVirtOperatorImage: "mirror.example.com/kv/pfx-virt-operator:v1.9.0"},
			check: func(t *testing.T, s *strategy.Strategy) {
				api := deployment(t, s, "virt-api").Spec.Template.Spec.Containers[0]
				if api.Image != "mirror.example.com/kv/pfx-virt-api:v1.9.0" {
					t.Errorf("virt-api image %s", api.Image)
				}
				tmpl := deployment(t, s, "virt-template-apiserver").Spec.Template.Spec.Containers[0]
				if tmpl.Image != "mirror.example.com/kv/pfx-virt-template-apiserver:v0.2.2" {
					t.Errorf("virt-template keeps its own version: %s", tmpl.Image)
				}
				ctrl := deployment(t, s, "virt-controller").Spec.Template.Spec.Containers[0]
				if !slices.Contains(ctrl.Args, "mirror.example.com/kv/pfx-virt-launcher:v1.9.0") {
					t.Errorf("virt-controller's launcher image: %v", ctrl.Args)
				}
			}},
		{name: "a digest override is used verbatim",
			env: deployid.MapEnv{deployid.EnvVirtOperatorImage: "ghcr.io/virt-operator/virt-operator:devel", "VIRT_HANDLER_IMAGE": "quay.io/kubevirt/virt-handler@sha256:abc"},
			check: func(t *testing.T, s *strategy.Strategy) {
				if img := handler(t, s).Containers[0].Image; img != "quay.io/kubevirt/virt-handler@sha256:abc" {
					t.Errorf("handler image %s", img)
				}
			}},
		{name: "pull policy and secrets",
			edit: func(s *v1.KubeVirtSpec) {
				s.ImagePullPolicy = corev1.PullAlways
				s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
			},
			check: func(t *testing.T, s *strategy.Strategy) {
				for _, spec := range podSpecs(s) {
					if !reflect.DeepEqual(spec.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "regcred"}}) {
						t.Errorf("%v: pull secrets %v", containerNames(spec), spec.ImagePullSecrets)
					}
					if spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
						t.Errorf("%v: pull policy %s", containerNames(spec), spec.Containers[0].ImagePullPolicy)
					}
				}
				if names := containerNames(handler(t, s)); !slices.Contains(names, "virt-launcher-image-holder") {
					t.Errorf("virt-handler holds no launcher image: %v", names)
				}
			}},
		{name: "pass-through env comes first, sorted",
			env: deployid.MapEnv{deployid.EnvVirtOperatorImage: "ghcr.io/virt-operator/virt-operator:devel", "KV_IO_EXTRA_ENV_ZED": "z", "KV_IO_EXTRA_ENV_ALPHA": "a"},
			check: func(t *testing.T, s *strategy.Strategy) {
				for _, spec := range podSpecs(s) {
					env := spec.Containers[0].Env
					if len(env) < 2 || env[0].Name != "ALPHA" || env[1].Name != "ZED" {
						t.Errorf("%v: env %v", containerNames(spec), env)
					}
				}
				if env := handler(t, s).Containers[0].Env; env[2].Name != "NODE_NAME" {
					t.Errorf("virt-handler's own env must follow: %v", env)
				}
			}},
		{name: "monitoring: RBAC, ServiceMonitor in serviceMonitorNamespace, PrometheusRule",
			edit:    func(s *v1.KubeVirtSpec) { s.ServiceMonitorNamespace = "kubevirt" },
			monitor: "monitoring",
			check: func(t *testing.T, s *strategy.Strategy) {
				if len(s.ServiceMonitors) != 1 || s.ServiceMonitors[0].Namespace != "kubevirt" || len(s.PrometheusRules) != 1 {
					t.Errorf("ServiceMonitors %v, PrometheusRules %d", s.Inventory(), len(s.PrometheusRules))
				}
				if ns := strategy.MonitorNamespaceOf(s); ns != "monitoring" {
					t.Errorf("the monitoring RoleBinding binds in %q", ns)
				}
			}},
		{name: "VMStatsCollector drops the PrometheusRule", edit: gates(deployid.GateVMStatsCollector), monitor: "monitoring",
			check: func(t *testing.T, s *strategy.Strategy) {
				if len(s.ServiceMonitors) != 1 || len(s.PrometheusRules) != 0 {
					t.Errorf("%d ServiceMonitors, %d PrometheusRules", len(s.ServiceMonitors), len(s.PrometheusRules))
				}
			}},
		{name: "v1.9: Template is Beta, on unless disabled", check: func(t *testing.T, s *strategy.Strategy) { deployment(t, s, "virt-template-controller") }},
		{name: "v1.9: Template disabled", edit: disabledGates(deployid.GateTemplate),
			check: func(t *testing.T, s *strategy.Strategy) {
				for _, d := range s.Deployments {
					if strings.HasPrefix(d.Name, "virt-template") {
						t.Errorf("%s with Template disabled", d.Name)
					}
				}
			}},
		{name: "v1.8: Template is Alpha: off unless listed", edit: tag("v1.8.4"),
			check: func(t *testing.T, s *strategy.Strategy) {
				if len(s.Deployments) != 4 {
					t.Errorf("v1.8 default Deployments %v", s.Inventory())
				}
			}},
		{name: "v1.9 Plugins: four admission policies", edit: gates(deployid.GatePlugins),
			check: func(t *testing.T, s *strategy.Strategy) {
				if len(s.ValidatingAdmissionPolicies) != 6 || len(s.ValidatingAdmissionPolicyBindings) != 6 {
					t.Errorf("%d policies, %d bindings", len(s.ValidatingAdmissionPolicies), len(s.ValidatingAdmissionPolicyBindings))
				}
			}},
		{name: "v1.8 has no Plugins", edit: func(s *v1.KubeVirtSpec) { tag("v1.8.4")(s); gates(deployid.GatePlugins)(s) },
			check: func(t *testing.T, s *strategy.Strategy) {
				if len(s.ValidatingAdmissionPolicies) != 1 {
					t.Errorf("%d policies", len(s.ValidatingAdmissionPolicies))
				}
			}},
		{name: "roleAggregationStrategy Manual opts every ClusterRole out",
			edit: func(s *v1.KubeVirtSpec) {
				gates(deployid.GateOptOutRoleAggregation)(s)
				s.Configuration.RoleAggregationStrategy = &manual
			},
			check: func(t *testing.T, s *strategy.Strategy) {
				n := 0
				for _, cr := range s.ClusterRoles {
					for k, v := range cr.Labels {
						if strings.HasPrefix(k, aggregateLabelPrefix) {
							n++
							if v != "false" {
								t.Errorf("%s: %s=%s", cr.Name, k, v)
							}
						}
					}
				}
				if n < 10 { // kubevirt.io:admin/edit/view and the virt-template roles
					t.Errorf("only %d aggregation labels", n)
				}
			}},
		{name: "PersistentReservation adds pr-helper", edit: gates(deployid.GatePersistentReservation),
			check: func(t *testing.T, s *strategy.Strategy) {
				spec := handler(t, s)
				if names := containerNames(spec); !slices.Contains(names, "pr-helper") || len(spec.Volumes) != 15 {
					t.Errorf("containers %v, %d volumes", names, len(spec.Volumes))
				}
			}},
		{name: "ExternalNetResourceInjection off: virt-controller reads NetworkAttachmentDefinitions",
			edit: disabledGates(deployid.GateExternalNetResourceInject),
			check: func(t *testing.T, s *strategy.Strategy) {
				for _, cr := range s.ClusterRoles {
					if cr.Name != "kubevirt-controller" {
						continue
					}
					last := cr.Rules[len(cr.Rules)-1]
					if !slices.Equal(last.Resources, []string{"network-attachment-definitions"}) {
						t.Errorf("last rule %v", last)
					}
				}
			}},
		{name: "migration network and synchronization port",
			edit: func(s *v1.KubeVirtSpec) {
				n := "migration-net"
				s.Configuration.MigrationConfiguration = &v1.MigrationConfiguration{Network: &n}
				s.SynchronizationPort = "9999"
			},
			check: func(t *testing.T, s *strategy.Strategy) {
				sync := deployment(t, s, "virt-synchronization-controller")
				if sync.Spec.Template.Annotations["k8s.v1.cni.cncf.io/networks"] != "migration-net@migration0" ||
					s.DaemonSets[0].Spec.Template.Annotations["k8s.v1.cni.cncf.io/networks"] != "migration-net@migration0" {
					t.Error("the migration network is not joined")
				}
				c := sync.Spec.Template.Spec.Containers[0]
				if c.Command[4] != "9999" || c.Ports[1].ContainerPort != 9999 {
					t.Errorf("sync port: %v %v", c.Command, c.Ports)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var edits []func(*v1.KubeVirtSpec)
			if tc.edit != nil {
				edits = append(edits, tc.edit)
			}
			tc.check(t, mustGenerate(t, Input{Config: config(t, tc.env, edits...), MonitorNamespace: tc.monitor}))
		})
	}
}

// The parsed schemas are held while a rendering uses them, not after: the
// operator renders rarely, and they take megabytes.
func TestSchemasNotHeldAfterRendering(t *testing.T) {
	mustGenerate(t, Input{Config: config(t, nil)})
	runtime.GC()
	schemaCache.Range(func(line, held any) bool {
		if held.(weak.Pointer[schemaSet]).Value() != nil {
			t.Errorf("release %s: its parsed schemas are still held after the rendering", line)
		}
		return true
	})
}
