package deployid

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

var idPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

func TestIDIsFortyLowercaseHex(t *testing.T) {
	cfg := mustConfig(t, newKubeVirt(), baseEnv())
	if !idPattern.MatchString(cfg.ID) {
		t.Fatalf("ID %q is not 40 lowercase hex characters", cfg.ID)
	}
	if cfg.ID != cfg.ComputeID() {
		t.Fatalf("ID %q differs from ComputeID %q", cfg.ID, cfg.ComputeID())
	}
}

// Regressions for the upstream bugs this package exists to prevent.
func TestRegressions(t *testing.T) {
	base := mustConfig(t, newKubeVirt(), baseEnv()).ID
	tests := []struct {
		name      string
		kv        *v1.KubeVirt
		env       MapEnv
		changesID bool
	}{
		{"only VIRT_HANDLER_IMAGE changed", newKubeVirt(), withEnv(baseEnv(), "VIRT_HANDLER_IMAGE", "quay.io/kubevirt/virt-handler:hotfix"), true},
		{"only a customizeComponents patch added", newKubeVirt(func(kv *v1.KubeVirt) {
			kv.Spec.CustomizeComponents.Patches = []v1.CustomizeComponentsPatch{{
				ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.MergePatchType, Patch: `{"metadata":{"labels":{"a":"b"}}}`,
			}}
		}), baseEnv(), true},
		{"only infra.nodePlacement changed", newKubeVirt(func(kv *v1.KubeVirt) {
			kv.Spec.Infra = &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{NodeSelector: map[string]string{"infra": "true"}}}
		}), baseEnv(), true},
		{"only workloadUpdateStrategy.batchEvictionSize changed", newKubeVirt(func(kv *v1.KubeVirt) {
			kv.Spec.WorkloadUpdateStrategy.BatchEvictionSize = ptr(42)
		}), baseEnv(), false},
		{"only KV_IO_EXTRA_ENV_X added", newKubeVirt(), withEnv(baseEnv(), "KV_IO_EXTRA_ENV_X", "1"), true},
		{"an unrelated env var", newKubeVirt(), withEnv(baseEnv(), "HOME", "/root"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustConfig(t, tt.kv, tt.env).ID
			if changed := got != base; changed != tt.changesID {
				t.Errorf("ID changed = %v, want %v", changed, tt.changesID)
			}
		})
	}
}

func TestPassthroughKeepsValueWithEquals(t *testing.T) {
	cfg := mustConfig(t, newKubeVirt(), withEnv(baseEnv(), "KV_IO_EXTRA_ENV_X", "a=b", "KV_IO_EXTRA_ENV_EMPTY", ""))
	if got := cfg.PassthroughEnvVars["X"]; got != "a=b" {
		t.Errorf("PassthroughEnvVars[X] = %q, want %q (upstream truncates; we do not)", got, "a=b")
	}
	want := []corev1.EnvVar{{Name: "EMPTY", Value: ""}, {Name: "X", Value: "a=b"}}
	if got := cfg.PassthroughEnv(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("PassthroughEnv() = %v, want %v", got, want)
	}
}

func TestFromKubeVirtRejectsBadInput(t *testing.T) {
	tests := []struct {
		name    string
		kv      *v1.KubeVirt
		env     Env
		wantErr string
	}{
		{"nil KubeVirt", nil, baseEnv(), "no KubeVirt"},
		{"nil env", newKubeVirt(), nil, "no environment"},
		{"bad pull policy", newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.ImagePullPolicy = "Sometimes" }), baseEnv(), `imagePullPolicy "Sometimes"`},
		{"bad port", newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.SynchronizationPort = "http" }), baseEnv(), `spec.synchronizationPort: "http" is not a port number`},
		{"port out of range", newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.SynchronizationPort = "70000" }), baseEnv(), `spec.synchronizationPort: "70000"`},
		{"zero replicas", newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.Infra = &v1.ComponentConfig{Replicas: ptr(uint8(0))} }), baseEnv(), "infra.replicas"},
		{"bad patch type", newKubeVirt(func(kv *v1.KubeVirt) {
			kv.Spec.CustomizeComponents.Patches = []v1.CustomizeComponentsPatch{{ResourceName: "*", ResourceType: "*", Type: "yaml"}}
		}), baseEnv(), `patches[0].type "yaml"`},
		{"a tag longer than a label value", newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.ImageTag = "v1.9.0-" + strings.Repeat("rc", 34) }), baseEnv(),
			`spec.imageTag: "v1.9.0-rcrc`},
		{"a tag longer than an image tag", newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.ImageTag = strings.Repeat("v", 129) }), baseEnv(), "spec.imageTag: \"vvv"},
		{"a tag with a '+'", newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.ImageTag = "v1.9.0+build.1" }), baseEnv(), `spec.imageTag: "v1.9.0+build.1" is not an image tag`},
		{"a short digest", newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.ImageTag = "sha256:beef" }), baseEnv(), `spec.imageTag: "sha256:beef" is neither`},
		{"an upper-case registry path", newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.ImageRegistry = "quay.io/KubeVirt" }), baseEnv(), `spec.imageRegistry: "quay.io/KubeVirt" is not an image registry`},
		{"a registry with a tag", newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.ImageRegistry = "quay.io/kubevirt:v1" }), baseEnv(), `spec.imageRegistry: "quay.io/kubevirt:v1"`},
		{"a registry ending in /", newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.ImageRegistry = "quay.io/kubevirt/" }), baseEnv(), `spec.imageRegistry: "quay.io/kubevirt/"`},
		{"a duration stored that is not a Go duration", newKubeVirt(func(kv *v1.KubeVirt) {
			kv.Spec.CertificateRotateStrategy.SelfSigned = &v1.KubeVirtSelfSignConfiguration{Server: &v1.CertConfig{RenewBefore: &v1.Duration{Invalid: `"7d"`}}}
			kv.Spec.RolloutWindows = []v1.MaintenanceWindow{{Start: "01:00", Duration: v1.Duration{Duration: time.Hour}}, {Start: "02:00", Duration: v1.Duration{Invalid: `"9999999999h"`}}}
		}), baseEnv(), `spec.certificateRotateStrategy.selfSigned.server.renewBefore: "7d" is not a Go duration such as 90s, 1h30m or 4.8h (a number and a unit per part: h, m, s, ms, us or ns)
spec.rolloutWindows[1].duration: "9999999999h" is not a Go duration`},
		{"a minimum TLS version that is none (stored under an older CRD)", newKubeVirt(func(kv *v1.KubeVirt) {
			kv.Spec.Configuration.TLSConfiguration = &v1.TLSConfiguration{MinTLSVersion: "TLS1.2"}
		}), baseEnv(), `spec.configuration.tlsConfiguration.minTLSVersion: "TLS1.2" is not VersionTLS10`},
		{"invalid UTF-8 in the environment", newKubeVirt(), withEnv(baseEnv(), "VIRT_API_IMAGE", "api\xff"), "not valid UTF-8"},
		{"pass-through without a name", newKubeVirt(), withEnv(baseEnv(), "KV_IO_EXTRA_ENV_", "x"), "KV_IO_EXTRA_ENV_ has no name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := FromKubeVirt(tt.kv, tt.env)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("FromKubeVirt() = %v, %v; want an error containing %q", cfg, err, tt.wantErr)
			}
		})
	}
}

// Empty blocks and empty strings are the same as absent ones.
func TestEmptyIsAbsent(t *testing.T) {
	base := mustConfig(t, newKubeVirt(), baseEnv()).ID
	edits := map[string]func(*v1.KubeVirt){
		"infra {}":                   func(kv *v1.KubeVirt) { kv.Spec.Infra = &v1.ComponentConfig{} },
		"workloads nodePlacement {}": func(kv *v1.KubeVirt) { kv.Spec.Workloads = &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{}} },
		"affinity {} and empty maps": func(kv *v1.KubeVirt) {
			kv.Spec.Infra = &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{Affinity: &corev1.Affinity{}, NodeSelector: map[string]string{}}}
		},
		"customizeComponents flags {}":   func(kv *v1.KubeVirt) { kv.Spec.CustomizeComponents.Flags = &v1.Flags{API: map[string]string{}} },
		"customizeComponents patches []": func(kv *v1.KubeVirt) { kv.Spec.CustomizeComponents.Patches = []v1.CustomizeComponentsPatch{} },
		"migration network \"\"": func(kv *v1.KubeVirt) {
			kv.Spec.Configuration.MigrationConfiguration = &v1.MigrationConfiguration{Network: ptr("")}
		},
		"imagePullSecrets []":          func(kv *v1.KubeVirt) { kv.Spec.ImagePullSecrets = []corev1.LocalObjectReference{} },
		"empty developerConfiguration": func(kv *v1.KubeVirt) { kv.Spec.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{} },
	}
	for name, edit := range edits {
		if got := mustConfig(t, newKubeVirt(edit), baseEnv()).ID; got != base {
			t.Errorf("%s changes the ID", name)
		}
	}
	cfg := mustConfig(t, newKubeVirt(), baseEnv())
	withEmpty := cfg.DeepCopy()
	withEmpty.AdditionalProperties["ProductName"] = ""
	if withEmpty.ComputeID() != cfg.ID {
		t.Error(`additionalProperties entry "" changes the ID`)
	}
}

func TestFromKubeVirtDoesNotAliasTheSpec(t *testing.T) {
	kv := newKubeVirt(func(kv *v1.KubeVirt) {
		kv.Spec.Infra = &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{NodeSelector: map[string]string{"a": "b"}}}
		kv.Spec.CustomizeComponents.Flags = &v1.Flags{Handler: map[string]string{"v": "4"}}
	})
	cfg := mustConfig(t, kv, baseEnv())
	kv.Spec.Infra.NodePlacement.NodeSelector["a"] = "changed"
	kv.Spec.CustomizeComponents.Flags.Handler["v"] = "9"
	if cfg.ComputeID() != cfg.ID {
		t.Fatal("editing the KubeVirt after FromKubeVirt changed the config")
	}
}

func TestGettersDefaults(t *testing.T) {
	cfg := &Config{}
	if cfg.ImagePullPolicy() != corev1.PullIfNotPresent || cfg.MonitorAccount() != "prometheus-k8s" ||
		cfg.SynchronizationPort() != 9185 || cfg.HypervisorName() != "kvm" ||
		cfg.UninstallStrategy() != v1.UninstallStrategyBlockUninstallIfWorkloadsExist ||
		strings.Join(cfg.PotentialMonitorNamespaces(), ",") != "openshift-monitoring,monitoring" ||
		cfg.ImagePullSecrets() != nil || cfg.ProductName() != "" || cfg.MigrationNetwork() != "" {
		t.Errorf("unexpected defaults: %+v", cfg)
	}
}

func TestGettersFromSpec(t *testing.T) {
	kv := newKubeVirt(func(kv *v1.KubeVirt) {
		s := &kv.Spec
		s.ImagePullPolicy = corev1.PullAlways
		s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "a"}, {Name: "b"}}
		s.MonitorNamespace, s.ServiceMonitorNamespace, s.MonitorAccount = "mon", "smon", "acct"
		s.ProductName, s.ProductVersion, s.ProductComponent = "acme", "2.1", "compute"
		s.SynchronizationPort = "9999"
		s.UninstallStrategy = v1.UninstallStrategyRemoveWorkloads
		s.Configuration.MigrationConfiguration = &v1.MigrationConfiguration{Network: ptr("migration-net")}
		s.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{
			FeatureGates:         []string{GateVMStatsCollector, GatePlugins, GatePersistentReservation, GateContainerPathVolumes},
			DisabledFeatureGates: []string{GateTemplate, GateDecentralizedLiveMigration},
		}
		s.Configuration.RoleAggregationStrategy = ptr(RoleAggregationManual)
	})
	cfg := mustConfig(t, kv, baseEnv())
	if cfg.ImagePullPolicy() != corev1.PullAlways || cfg.MonitorAccount() != "acct" || cfg.SynchronizationPort() != 9999 ||
		cfg.ServiceMonitorNamespace() != "smon" || strings.Join(cfg.PotentialMonitorNamespaces(), ",") != "mon" ||
		cfg.ProductName() != "acme" || cfg.ProductVersion() != "2.1" || cfg.ProductComponent() != "compute" ||
		cfg.UninstallStrategy() != v1.UninstallStrategyRemoveWorkloads || cfg.MigrationNetwork() != "migration-net" {
		t.Errorf("getters disagree with the spec: %s", cfg.JSON())
	}
	if s := cfg.ImagePullSecrets(); len(s) != 2 || s[0].Name != "a" || s[1].Name != "b" {
		t.Errorf("ImagePullSecrets() = %v", s)
	}
	if !cfg.VMStatsCollectorEnabled() || !cfg.PluginsEnabled() || !cfg.PersistentReservationEnabled() ||
		!cfg.ContainerPathVolumesEnabled() || !cfg.OptOutRoleAggregation() || !cfg.ExternalNetResourceInjection() ||
		cfg.VirtTemplateDeploymentEnabled() || cfg.DecentralizedLiveMigrationEnabled() {
		t.Errorf("feature-gate switches wrong: %v", cfg.AdditionalProperties)
	}
	defaults := mustConfig(t, newKubeVirt(), baseEnv())
	if !defaults.VirtTemplateDeploymentEnabled() || defaults.DecentralizedLiveMigrationEnabled() || defaults.VMStatsCollectorEnabled() {
		t.Errorf("Beta gates should default on and Alpha off: %v", defaults.AdditionalProperties)
	}
}

// The export proxy follows the release's own operator: v1.8's (and v1.7's, by
// v1.8's rules) writes it only with VMExport listed, v1.9's always, so no v1.9
// ID carries the key.
func TestExportProxyFollowsTheReleasesGate(t *testing.T) {
	tests := []struct {
		tag   string
		gates []string
		want  bool
	}{
		{"v1.9.0", nil, true},
		{"v1.9.0", []string{"VMExport"}, true},
		{"v1.8.4", nil, false},
		{"v1.8.4", []string{"VMExport"}, true},
		{"v1.7.4", nil, false},
	}
	for _, tt := range tests {
		cfg := mustConfig(t, newKubeVirt(func(kv *v1.KubeVirt) {
			kv.Spec.ImageTag = tt.tag
			kv.Spec.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{FeatureGates: tt.gates}
		}), baseEnv())
		if got := cfg.ExportProxyEnabled(); got != tt.want {
			t.Errorf("%s with gates %v: export proxy enabled %v, want %v", tt.tag, tt.gates, got, tt.want)
		}
		if _, has := cfg.AdditionalProperties[KeyExportProxyDisabled]; has == tt.want {
			t.Errorf("%s with gates %v: key %s present %v", tt.tag, tt.gates, KeyExportProxyDisabled, has)
		}
	}
}

// virt-template's TLS flags come from the CR as written, upstream's default
// (VersionTLS12) without it; an empty configuration is no flags, not the default.
func TestTLS(t *testing.T) {
	tls := func(c *v1.TLSConfiguration) v1.TLSConfiguration {
		return mustConfig(t, newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.Configuration.TLSConfiguration = c }), baseEnv()).TLS()
	}
	if got := tls(nil); !reflect.DeepEqual(got, v1.TLSConfiguration{MinTLSVersion: v1.VersionTLS12}) {
		t.Errorf("default %+v", got)
	}
	if got := tls(&v1.TLSConfiguration{}); !reflect.DeepEqual(got, v1.TLSConfiguration{}) {
		t.Errorf("empty %+v", got)
	}
	set := &v1.TLSConfiguration{MinTLSVersion: v1.VersionTLS13, Ciphers: []string{"b", "a"}}
	if got := tls(set); !reflect.DeepEqual(got, *set) {
		t.Errorf("set %+v", got)
	}
}

func TestWorkloadUpdateAndCertificateSettingsStayOut(t *testing.T) {
	kv := newKubeVirt(func(kv *v1.KubeVirt) {
		kv.Spec.WorkloadUpdateStrategy = v1.KubeVirtWorkloadUpdateStrategy{
			WorkloadUpdateMethods: []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodEvict},
			BatchEvictionInterval: &v1.Duration{Duration: 5},
		}
		kv.Spec.CertificateRotateStrategy.SelfSigned = &v1.KubeVirtSelfSignConfiguration{CA: &v1.CertConfig{}}
	})
	if mustConfig(t, kv, baseEnv()).ID != mustConfig(t, newKubeVirt(), baseEnv()).ID {
		t.Error("runtime-only settings changed the ID")
	}
}
