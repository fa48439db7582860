package apply_test

import (
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

// What Prepare makes of each supported release's strategy is what that
// release's own operator leaves running (test/e2e/fidelity's live test holds
// it against upstream's): virt-handler with --migration-cn-types migration and
// without its client certificate, virt-template with the TLS flags, v1.8's
// export proxy only with VMExport. The strategy itself stays the release's dump.
func TestPrepareIsUpstreamsShapeAtRest(t *testing.T) {
	for _, tt := range []struct {
		tag         string
		gates       []string
		exportProxy bool
	}{
		{"v1.9.0", nil, true},
		{"v1.8.4", []string{"Template"}, false},
		{"v1.8.4", []string{"Template", "VMExport"}, true},
	} {
		kv := &v1.KubeVirt{}
		kv.Name, kv.Namespace = "kubevirt", "kubevirt"
		kv.Spec.ImageTag = tt.tag
		kv.Spec.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{FeatureGates: tt.gates}
		cfg, err := deployid.FromKubeVirt(kv, deployid.MapEnv{deployid.EnvVirtOperatorImage: "quay.io/kubevirt/virt-operator:" + tt.tag})
		if err != nil {
			t.Fatal(err)
		}
		s, err := generate.Generate(generate.Input{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		prepared, err := apply.Prepare(s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s with gates %v", tt.tag, tt.gates)

		handler := func(s *strategy.Strategy) (args []string, certVolume bool) {
			for _, ds := range s.DaemonSets {
				if ds.Name == apply.VirtHandler {
					spec := ds.Spec.Template.Spec
					for _, v := range spec.Volumes {
						certVolume = certVolume || v.Name == apply.HandlerCertSecret
					}
					for _, m := range spec.Containers[0].VolumeMounts {
						certVolume = certVolume || m.Name == apply.HandlerCertSecret
					}
					return spec.Containers[0].Args, certVolume
				}
			}
			t.Fatalf("%s: no virt-handler", name)
			return nil, false
		}
		if args, certs := handler(s); slices.Contains(args, apply.MigrationCNTypesFlag) || !certs {
			t.Errorf("%s: the strategy's virt-handler is not the release's dump (args %q, certificate volume %v)", name, args, certs)
		}
		if args, certs := handler(prepared); !hasFlag(args, apply.MigrationCNTypesFlag, "migration") || certs {
			t.Errorf("%s: prepared virt-handler args %q, certificate volume %v; want the flag and no volume", name, args, certs)
		}

		deployments := map[string]*appsv1.Deployment{}
		for _, d := range prepared.Deployments {
			deployments[d.Name] = d
		}
		for name2, container := range map[string]string{"virt-template-apiserver": "apiserver", "virt-template-controller": "manager"} {
			d := deployments[name2]
			if d == nil {
				t.Fatalf("%s: no %s", name, name2)
			}
			for _, c := range d.Spec.Template.Spec.Containers {
				if c.Name == container && !hasFlag(c.Args, "--tls-min-version", "VersionTLS12") {
					t.Errorf("%s: %s's args %q lack --tls-min-version VersionTLS12", name, name2, c.Args)
				}
			}
		}
		if _, got := deployments[apply.VirtExportProxy]; got != tt.exportProxy {
			t.Errorf("%s: virt-exportproxy written %v, want %v", name, got, tt.exportProxy)
		}
	}
}

// hasFlag: args end with flag and value (the adjustments append them).
func hasFlag(args []string, flag, value string) bool {
	n := len(args)
	return n >= 2 && args[n-2] == flag && args[n-1] == value
}
