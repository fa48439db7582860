package generate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

func TestGenerateRejectsBadInput(t *testing.T) {
	good := func() *deployid.Config { return config(t, nil) }
	tests := []struct {
		name    string
		in      func() Input
		wantErr string
	}{
		{"nil config", func() Input { return Input{} }, "no deployment config"},
		{"no namespace", func() Input { c := good(); c.Namespace = ""; return Input{Config: c} }, "no namespace"},
		{"bad namespace", func() Input { c := good(); c.Namespace = "Kube_Virt"; return Input{Config: c} }, `namespace "Kube_Virt"`},
		{"no ID", func() Input { c := good(); c.ID = ""; return Input{Config: c} }, "no ID"},
		{"bad pull policy", func() Input {
			c := good()
			c.AdditionalProperties[deployid.KeyImagePullPolicy] = "Sometimes"
			return Input{Config: c}
		}, `imagePullPolicy "Sometimes"`},
		{"bad monitor namespace", func() Input { return Input{Config: good(), MonitorNamespace: "not a namespace"} }, "monitor namespace"},
		{"bad service monitor namespace", func() Input {
			c := good()
			c.AdditionalProperties[deployid.KeyServiceMonitorNamespace] = "UPPER"
			return Input{Config: c, MonitorNamespace: "mon"}
		}, "serviceMonitorNamespace"},
		{"blank image", func() Input { c := good(); c.VirtHandlerImage = " "; return Input{Config: c} }, "no image for virt-handler"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Generate(tt.in())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
			}
			if s != nil {
				t.Error("a strategy came with the error")
			}
		})
	}
}

func TestOptOutRoleAggregation(t *testing.T) {
	manual := deployid.RoleAggregationManual
	cfg := config(t, nil, func(s *v1.KubeVirtSpec) { s.Configuration.RoleAggregationStrategy = &manual })
	aggregated := 0
	for _, optOut := range []bool{false, true} {
		c := config(t, nil)
		if optOut {
			c = cfg
		}
		for _, cr := range mustGenerate(t, Input{Config: c}).ClusterRoles {
			for k, v := range cr.Labels {
				if !strings.HasPrefix(k, aggregatePrefix) {
					continue
				}
				aggregated++
				if want := map[bool]string{false: "true", true: "false"}[optOut]; v != want {
					t.Errorf("opt-out %v: %s %s=%s, want %s", optOut, cr.Name, k, v, want)
				}
			}
		}
	}
	if aggregated != 6 {
		t.Errorf("%d aggregation labels over both runs, want 3 each", aggregated)
	}
}

func TestExternalNetResourceInjectionDropsNADRule(t *testing.T) {
	hasNAD := func(cfg *deployid.Config) bool {
		for _, cr := range mustGenerate(t, Input{Config: cfg}).ClusterRoles {
			for _, r := range cr.Rules {
				if cr.Name == saController && r.APIGroups[0] == "k8s.cni.cncf.io" {
					return true
				}
			}
		}
		return false
	}
	if hasNAD(config(t, nil)) {
		t.Error("NAD rule with ExternalNetResourceInjection on (its default)")
	}
	if !hasNAD(config(t, nil, disabledGates(deployid.GateExternalNetResourceInject))) {
		t.Error("no NAD rule with ExternalNetResourceInjection off")
	}
}

func TestSpecInputsReachTheObjects(t *testing.T) {
	env := deployid.MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.7.0", "KV_IO_EXTRA_ENV_HTTP_PROXY": "http://proxy:3128"}
	cfg := config(t, env, gates(deployid.GatePersistentReservation), func(s *v1.KubeVirtSpec) {
		s.ImagePullPolicy = corev1.PullAlways
		s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
		s.ProductName, s.ProductVersion, s.ProductComponent = "acme-virt", "not a valid label!", "compute"
		s.SynchronizationPort = "9999"
		s.Configuration.MigrationConfiguration = &v1.MigrationConfiguration{Network: ptrTo("migration-net")}
	})
	s := mustGenerate(t, Input{Config: cfg})
	for name, tmpl := range podTemplates(s) {
		if len(tmpl.Spec.ImagePullSecrets) != 1 || tmpl.Spec.ImagePullSecrets[0].Name != "pull" {
			t.Errorf("%s: pull secrets %v", name, tmpl.Spec.ImagePullSecrets)
		}
		for _, c := range tmpl.Spec.Containers {
			if c.ImagePullPolicy != corev1.PullAlways {
				t.Errorf("%s/%s: pull policy %s", name, c.Name, c.ImagePullPolicy)
			}
			if !hasEnv(c.Env, "HTTP_PROXY", "http://proxy:3128") {
				t.Errorf("%s/%s: no pass-through env: %v", name, c.Name, c.Env)
			}
		}
		l := tmpl.Labels
		if l[metadata.AppPartOfLabel] != "acme-virt" || l[metadata.AppComponentLabel] != "compute" {
			t.Errorf("%s: product labels %v", name, l)
		}
		if _, ok := l[metadata.AppVersionLabel]; ok {
			t.Errorf("%s: an invalid product version became a label", name)
		}
	}
	handler := s.DaemonSets[0].Spec.Template
	if len(handler.Spec.Containers) != 2 || handler.Spec.Containers[1].Name != "pr-helper" {
		t.Error("no pr-helper container with PersistentReservation")
	}
	if !strings.Contains(handler.Annotations[multusNetworksAnnotation], `"name":"migration-net"`) {
		t.Errorf("migration network annotation %q", handler.Annotations[multusNetworksAnnotation])
	}
	sync := deploymentNamed(t, s, virtSyncCtrl).Spec.Template.Spec.Containers[0]
	if !strings.Contains(strings.Join(sync.Args, " "), "--synchronization-port 9999") || sync.Ports[1].ContainerPort != 9999 {
		t.Errorf("synchronization port not used: %v %v", sync.Args, sync.Ports)
	}
}

func hasEnv(env []corev1.EnvVar, name, value string) bool {
	for _, e := range env {
		if e.Name == name && e.Value == value {
			return true
		}
	}
	return false
}

func ptrTo[T any](v T) *T { return &v }
