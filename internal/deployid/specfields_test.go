package deployid

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// specEdit is one edit of a spec field and whether it must change the ID.
type specEdit struct {
	what      string
	edit      func(*v1.KubeVirtSpec)
	changesID bool
}

func in(what string, edit func(*v1.KubeVirtSpec)) specEdit  { return specEdit{what, edit, true} }
func out(what string, edit func(*v1.KubeVirtSpec)) specEdit { return specEdit{what, edit, false} }

func gates(on ...string) func(*v1.KubeVirtSpec) {
	return func(s *v1.KubeVirtSpec) { devConfig(s).FeatureGates = on }
}

func disabledGates(off ...string) func(*v1.KubeVirtSpec) {
	return func(s *v1.KubeVirtSpec) { devConfig(s).DisabledFeatureGates = off }
}

func devConfig(s *v1.KubeVirtSpec) *v1.DeveloperConfiguration {
	if s.Configuration.DeveloperConfiguration == nil {
		s.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{}
	}
	return s.Configuration.DeveloperConfiguration
}

func migrations(s *v1.KubeVirtSpec) *v1.MigrationConfiguration {
	if s.Configuration.MigrationConfiguration == nil {
		s.Configuration.MigrationConfiguration = &v1.MigrationConfiguration{}
	}
	return s.Configuration.MigrationConfiguration
}

// specClassification classifies every KubeVirtSpec field, by JSON path, as in the
// ID (edits must change it) or out of it (edits must not). A struct field of this
// API that is not listed is descended into, so each of its fields must be listed.
// Adding a spec field without classifying it here fails TestEverySpecFieldIsClassified.
var specClassification = map[string][]specEdit{
	"imageTag":                {in("set", func(s *v1.KubeVirtSpec) { s.ImageTag = "v9" })},
	"imageRegistry":           {in("set", func(s *v1.KubeVirtSpec) { s.ImageRegistry = "mirror.io/kv" })},
	"imagePullPolicy":         {in("Always", func(s *v1.KubeVirtSpec) { s.ImagePullPolicy = corev1.PullAlways })},
	"imagePullSecrets":        {in("add", func(s *v1.KubeVirtSpec) { s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "p"}} })},
	"monitorNamespace":        {in("set", func(s *v1.KubeVirtSpec) { s.MonitorNamespace = "mon" })},
	"serviceMonitorNamespace": {in("set", func(s *v1.KubeVirtSpec) { s.ServiceMonitorNamespace = "smon" })},
	"monitorAccount":          {in("set", func(s *v1.KubeVirtSpec) { s.MonitorAccount = "acct" })},
	"uninstallStrategy":       {in("set", func(s *v1.KubeVirtSpec) { s.UninstallStrategy = v1.UninstallStrategyRemoveWorkloads })},
	"productVersion":          {in("set", func(s *v1.KubeVirtSpec) { s.ProductVersion = "2" })},
	"productName":             {in("set", func(s *v1.KubeVirtSpec) { s.ProductName = "acme" })},
	"productComponent":        {in("set", func(s *v1.KubeVirtSpec) { s.ProductComponent = "c" })},
	"synchronizationPort":     {in("set", func(s *v1.KubeVirtSpec) { s.SynchronizationPort = "9999" })},
	"infra": {
		in("replicas", func(s *v1.KubeVirtSpec) { s.Infra = &v1.ComponentConfig{Replicas: ptr(uint8(3))} }),
		in("nodeSelector", func(s *v1.KubeVirtSpec) {
			s.Infra = &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{NodeSelector: map[string]string{"a": ""}}}
		}),
		in("tolerations", func(s *v1.KubeVirtSpec) {
			s.Infra = &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}}
		}),
		in("affinity", func(s *v1.KubeVirtSpec) {
			s.Infra = &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{LabelSelector: &metav1.LabelSelector{}, TopologyKey: "zone"}},
			}}}}
		}),
		out("empty block", func(s *v1.KubeVirtSpec) { s.Infra = &v1.ComponentConfig{} }),
	},
	"workloads": {
		in("nodeSelector", func(s *v1.KubeVirtSpec) {
			s.Workloads = &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{NodeSelector: map[string]string{"w": "1"}}}
		}),
		out("empty placement", func(s *v1.KubeVirtSpec) { s.Workloads = &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{}} }),
	},
	"customizeComponents": {
		in("patch", func(s *v1.KubeVirtSpec) {
			s.CustomizeComponents.Patches = []v1.CustomizeComponentsPatch{{ResourceName: "*", ResourceType: "Service", Type: v1.JSONPatchType, Patch: "[]"}}
		}),
		in("api flag", func(s *v1.KubeVirtSpec) { s.CustomizeComponents.Flags = &v1.Flags{API: map[string]string{"v": "3"}} }),
		in("controller flag", func(s *v1.KubeVirtSpec) {
			s.CustomizeComponents.Flags = &v1.Flags{Controller: map[string]string{"v": ""}}
		}),
		in("handler flag", func(s *v1.KubeVirtSpec) {
			s.CustomizeComponents.Flags = &v1.Flags{Handler: map[string]string{"x": "y"}}
		}),
		out("empty flags", func(s *v1.KubeVirtSpec) { s.CustomizeComponents.Flags = &v1.Flags{} }),
	},
	"workloadUpdateStrategy": {
		out("methods", func(s *v1.KubeVirtSpec) {
			s.WorkloadUpdateStrategy.WorkloadUpdateMethods = []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate}
		}),
		out("batchEvictionSize", func(s *v1.KubeVirtSpec) { s.WorkloadUpdateStrategy.BatchEvictionSize = ptr(5) }),
		out("batchEvictionInterval", func(s *v1.KubeVirtSpec) {
			s.WorkloadUpdateStrategy.BatchEvictionInterval = &v1.Duration{Duration: time.Minute}
		}),
	},
	"paused":         {out("set", func(s *v1.KubeVirtSpec) { s.Paused = true })},
	"rolloutWindows": {out("set", func(s *v1.KubeVirtSpec) { s.RolloutWindows = []v1.MaintenanceWindow{{Start: "01:00"}} })},
	"workloadUpdates": {
		out("operator's updater", func(s *v1.KubeVirtSpec) {
			s.WorkloadUpdates = &v1.WorkloadUpdatePolicy{Methods: []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodEvict}, Paused: true}
		}),
	},
	"handlerRollout": {
		out("canary policy", func(s *v1.KubeVirtSpec) { s.HandlerRollout = &v1.HandlerRolloutPolicy{CanarySize: ptr(int32(2))} }),
	},
	"certificateRotateStrategy": {
		out("selfSigned", func(s *v1.KubeVirtSpec) {
			s.CertificateRotateStrategy.SelfSigned = &v1.KubeVirtSelfSignConfiguration{
				CA: &v1.CertConfig{Duration: &v1.Duration{Duration: time.Hour}}, Server: &v1.CertConfig{RenewBefore: &v1.Duration{Duration: time.Minute}},
			}
		}),
	},
	"configuration.developerConfiguration.featureGates": {
		in("VMStatsCollector", gates(GateVMStatsCollector)),
		in("Plugins", gates(GatePlugins)),
		in("PersistentReservation", gates(GatePersistentReservation)),
		in("ContainerPathVolumes", gates(GateContainerPathVolumes)),
		in("DecentralizedLiveMigration (Alpha in v1.9)", gates(GateDecentralizedLiveMigration)),
		out("a behaviour-only gate", gates("Snapshot")),
		out("a Beta gate that is on anyway", gates(GateTemplate)),
	},
	"configuration.developerConfiguration.disabledFeatureGates": {
		in("Template", disabledGates(GateTemplate)),
		in("ExternalNetResourceInjection", disabledGates(GateExternalNetResourceInject)),
		out("a behaviour-only gate", disabledGates("Snapshot")),
		out("an Alpha gate that is off anyway", disabledGates(GateVMStatsCollector)),
	},
	"configuration.migrations.network":                           {in("set", func(s *v1.KubeVirtSpec) { migrations(s).Network = ptr("net") })},
	"configuration.migrations.parallelMigrationsPerCluster":      {out("set", func(s *v1.KubeVirtSpec) { migrations(s).ParallelMigrationsPerCluster = ptr(uint32(9)) })},
	"configuration.migrations.parallelOutboundMigrationsPerNode": {out("set", func(s *v1.KubeVirtSpec) { migrations(s).ParallelOutboundMigrationsPerNode = ptr(uint32(9)) })},
	"configuration.virtTemplateDeployment.enabled": {
		in("false", func(s *v1.KubeVirtSpec) {
			s.Configuration.VirtTemplateDeployment = &v1.VirtTemplateDeployment{Enabled: ptr(false)}
		}),
		out("true", func(s *v1.KubeVirtSpec) {
			s.Configuration.VirtTemplateDeployment = &v1.VirtTemplateDeployment{Enabled: ptr(true)}
		}),
	},
	"configuration.persistentReservationConfiguration.enabled": {
		in("true", func(s *v1.KubeVirtSpec) {
			s.Configuration.PersistentReservationConfiguration = &v1.PersistentReservationConfiguration{Enabled: ptr(true)}
		}),
		out("false", func(s *v1.KubeVirtSpec) {
			s.Configuration.PersistentReservationConfiguration = &v1.PersistentReservationConfiguration{Enabled: ptr(false)}
		}),
	},
	"configuration.commonInstancetypesDeployment.enabled": {
		in("false", func(s *v1.KubeVirtSpec) {
			s.Configuration.CommonInstancetypesDeployment = &v1.CommonInstancetypesDeployment{Enabled: ptr(false)}
		}),
		out("true", func(s *v1.KubeVirtSpec) {
			s.Configuration.CommonInstancetypesDeployment = &v1.CommonInstancetypesDeployment{Enabled: ptr(true)}
		}),
	},
	// Written to status for virt-api to read; no created object changes.
	"configuration.architectureConfiguration.defaultArchitecture": {
		out("arm64", func(s *v1.KubeVirtSpec) {
			s.Configuration.ArchitectureConfiguration = &v1.ArchitectureConfiguration{DefaultArchitecture: "arm64"}
		}),
	},
	// Passed to virt-template's components as flags, as upstream.
	"configuration.tlsConfiguration": {
		in("minTLSVersion", func(s *v1.KubeVirtSpec) {
			s.Configuration.TLSConfiguration = &v1.TLSConfiguration{MinTLSVersion: v1.VersionTLS13}
		}),
		in("ciphers", func(s *v1.KubeVirtSpec) {
			s.Configuration.TLSConfiguration = &v1.TLSConfiguration{Ciphers: []string{"TLS_AES_128_GCM_SHA256"}}
		}),
		in("empty block (no flags at all, not the default's)", func(s *v1.KubeVirtSpec) {
			s.Configuration.TLSConfiguration = &v1.TLSConfiguration{}
		}),
	},
	"configuration.roleAggregationStrategy": {
		in("Manual", func(s *v1.KubeVirtSpec) { s.Configuration.RoleAggregationStrategy = ptr(RoleAggregationManual) }),
		out("AggregateToDefault", func(s *v1.KubeVirtSpec) {
			s.Configuration.RoleAggregationStrategy = ptr(v1.RoleAggregationStrategy("AggregateToDefault"))
		}),
	},
}

// specPaths lists the JSON paths of typ's fields, descending into API structs whose
// path is not classified itself.
func specPaths(t *testing.T, typ reflect.Type, prefix string) []string {
	var paths []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		path := prefix + name
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		_, classified := specClassification[path]
		if !classified && ft.Kind() == reflect.Struct && ft.PkgPath() == reflect.TypeFor[v1.KubeVirt]().PkgPath() {
			paths = append(paths, specPaths(t, ft, path+".")...)
			continue
		}
		paths = append(paths, path)
	}
	return paths
}

func TestEverySpecFieldIsClassified(t *testing.T) {
	seen := map[string]bool{}
	for _, path := range specPaths(t, reflect.TypeFor[v1.KubeVirtSpec](), "") {
		seen[path] = true
		if _, ok := specClassification[path]; !ok {
			t.Errorf("spec.%s is not classified as in or out of the deployment ID: add it to specClassification (and to FromKubeVirt if it shapes created objects)", path)
		}
	}
	for path := range specClassification {
		if !seen[path] {
			t.Errorf("specClassification lists %q, which is not a spec field", path)
		}
	}
}

func TestSpecEditsChangeTheIDExactlyWhenClassifiedIn(t *testing.T) {
	base := mustConfig(t, newKubeVirt(), baseEnv()).ID
	for path, edits := range specClassification {
		for _, e := range edits {
			t.Run(path+"/"+e.what, func(t *testing.T) {
				kv := newKubeVirt(func(kv *v1.KubeVirt) { e.edit(&kv.Spec) })
				if changed := mustConfig(t, kv, baseEnv()).ID != base; changed != e.changesID {
					t.Errorf("ID changed = %v, want %v", changed, e.changesID)
				}
			})
		}
	}
}
