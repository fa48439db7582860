package generate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
)

// Why an edit that changes the deployment ID may leave the rendered strategy as is.
const (
	rendered    = "rendered"      // the strategy's objects change
	appliedLate = "applied later" // placement, customizeComponents, apply-time gates
	operatorUse = "operator only" // read by the operator, in no object
	leftOut     = "left out"      // objects not generated yet (doc.go)
)

// renderWithoutID renders the strategy of cfg as the dump Job would, with
// Prometheus found in the first candidate namespace, and the ID masked: every
// object carries it, so it alone would make any two renderings differ.
func renderWithoutID(t *testing.T, cfg *deployid.Config) string {
	t.Helper()
	y, err := RenderYAML(mustGenerate(t, Input{Config: cfg, MonitorNamespace: cfg.PotentialMonitorNamespaces()[0]}))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(y), cfg.ID, "<id>")
}

// TestEveryIDChangeIsRenderedOrAppliedLater ties the generator to the deployment
// ID: an edit that yields a new ID either changes the rendered strategy or is
// one the apply engine (or the operator) uses on top of it.
func TestEveryIDChangeIsRenderedOrAppliedLater(t *testing.T) {
	manual := deployid.RoleAggregationManual
	edits := []struct {
		what string
		why  string
		env  map[string]string
		edit func(*v1.KubeVirtSpec)
	}{
		{"imageTag", rendered, nil, func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.8.0" }},
		{"imageRegistry", rendered, nil, func(s *v1.KubeVirtSpec) { s.ImageRegistry = "mirror.example/kv" }},
		{"VIRT_HANDLER_IMAGE", rendered, map[string]string{"VIRT_HANDLER_IMAGE": "h:1"}, nil},
		{"pass-through env", rendered, map[string]string{"KV_IO_EXTRA_ENV_X": "1"}, nil},
		{"imagePullPolicy", rendered, nil, func(s *v1.KubeVirtSpec) { s.ImagePullPolicy = corev1.PullAlways }},
		{"imagePullSecrets", rendered, nil, func(s *v1.KubeVirtSpec) { s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "p"}} }},
		{"productName", rendered, nil, func(s *v1.KubeVirtSpec) { s.ProductName = "acme" }},
		{"productVersion", rendered, nil, func(s *v1.KubeVirtSpec) { s.ProductVersion = "1.0" }},
		{"productComponent", rendered, nil, func(s *v1.KubeVirtSpec) { s.ProductComponent = "c" }},
		{"monitorNamespace", rendered, nil, func(s *v1.KubeVirtSpec) { s.MonitorNamespace = "mon" }},
		{"serviceMonitorNamespace", rendered, nil, func(s *v1.KubeVirtSpec) { s.ServiceMonitorNamespace = "sm" }},
		{"monitorAccount", rendered, nil, func(s *v1.KubeVirtSpec) { s.MonitorAccount = "prom" }},
		{"synchronizationPort", rendered, nil, func(s *v1.KubeVirtSpec) { s.SynchronizationPort = "9999" }},
		{"migration network", rendered, nil, func(s *v1.KubeVirtSpec) {
			s.Configuration.MigrationConfiguration = &v1.MigrationConfiguration{Network: ptrTo("net")}
		}},
		{"FG VMStatsCollector", rendered, nil, gates(deployid.GateVMStatsCollector)},
		{"FG PersistentReservation", rendered, nil, gates(deployid.GatePersistentReservation)},
		{"FG ExternalNetResourceInjection off", rendered, nil, disabledGates(deployid.GateExternalNetResourceInject)},
		{"FG DecentralizedLiveMigration off", rendered, nil, disabledGates(deployid.GateDecentralizedLiveMigration)},
		{"roleAggregationStrategy Manual", rendered, nil, func(s *v1.KubeVirtSpec) { s.Configuration.RoleAggregationStrategy = &manual }},

		{"infra replicas", appliedLate, nil, func(s *v1.KubeVirtSpec) { s.Infra = &v1.ComponentConfig{Replicas: ptrTo(uint8(3))} }},
		{"workloads nodeSelector", appliedLate, nil, func(s *v1.KubeVirtSpec) {
			s.Workloads = &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{NodeSelector: map[string]string{"w": "1"}}}
		}},
		{"customizeComponents flags", appliedLate, nil, func(s *v1.KubeVirtSpec) {
			s.CustomizeComponents.Flags = &v1.Flags{API: map[string]string{"v": "3"}}
		}},
		{"FG ContainerPathVolumes", appliedLate, nil, gates(deployid.GateContainerPathVolumes)},
		{"uninstallStrategy", operatorUse, nil, func(s *v1.KubeVirtSpec) { s.UninstallStrategy = v1.UninstallStrategyRemoveWorkloads }},
		{"FG Template off", leftOut, nil, disabledGates(deployid.GateTemplate)},
		{"FG Plugins", leftOut, nil, gates(deployid.GatePlugins)},
	}
	base := config(t, nil)
	baseYAML := renderWithoutID(t, base)
	for _, e := range edits {
		t.Run(e.what, func(t *testing.T) {
			env := deployid.MapEnv{}
			for k, v := range operatorEnv {
				env[k] = v
			}
			for k, v := range e.env {
				env[k] = v
			}
			var edits []func(*v1.KubeVirtSpec)
			if e.edit != nil {
				edits = append(edits, e.edit)
			}
			cfg := config(t, env, edits...)
			if cfg.ID == base.ID {
				t.Fatalf("the edit does not change the ID; it does not belong in this table")
			}
			changed := renderWithoutID(t, cfg) != baseYAML
			if changed != (e.why == rendered) {
				t.Errorf("rendered strategy changed = %v, but the edit is classified %q", changed, e.why)
			}
		})
	}
}
