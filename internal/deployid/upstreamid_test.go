package deployid

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// upstreamCase is a KubeVirt CR as stored (the spec's JSON), the environment
// of upstream's operator, and the target that operator's own code computed for
// them (GetTargetConfigFromKV of v1.9.0 or v1.8.4, built from the tag's source
// and run once on these inputs; the figures are its output, not this package's).
type upstreamCase struct {
	name, namespace, spec string
	env                   MapEnv
	want                  UpstreamTarget
}

// The CR as upstream's operator reads it: the spec decoded into this
// operator's types, the hypervisors' names (which they do not carry) from the
// JSON itself.
func (tc upstreamCase) input(t *testing.T) (*v1.KubeVirt, []string) {
	t.Helper()
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: tc.namespace, Name: "kubevirt"}}
	if err := json.Unmarshal([]byte(tc.spec), &kv.Spec); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Configuration struct {
			Hypervisors []struct{ Name string } `json:"hypervisors"`
		} `json:"configuration"`
	}
	if err := json.Unmarshal([]byte(tc.spec), &raw); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range raw.Configuration.Hypervisors {
		names = append(names, h.Name)
	}
	return kv, names
}

func (tc upstreamCase) check(t *testing.T) {
	kv, hypervisors := tc.input(t)
	got, err := UpstreamTargetOf(kv, hypervisors, tc.env)
	if err != nil {
		t.Fatalf("%s: %v", tc.name, err)
	}
	if got != tc.want {
		t.Errorf("%s:\n got  %+v\n want %+v (upstream's)", tc.name, got, tc.want)
	}
}

// Upstream's v1.9.0 operator: every spec field by name, string values as
// written ("" and an empty list count), structured ones never by content;
// the gates by v1.9's rules (Beta on unless disabled); registry, prefix and
// tag as its getConfig reads the operator image, quirks included (a digest
// after a tag stays in the version; the prefix is left out of the operator
// image a spec registry or tag builds); pass-through values cut at a second '='.
func TestUpstreamTargetOfV19(t *testing.T) {
	for _, tc := range []upstreamCase{
		{"imageTag only", "kubevirt", `{"imageTag":"v1.9.0"}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0"},
			UpstreamTarget{"v1.9.0", "quay.io/kubevirt", "26d9c18701d6b1d6d39b6ef1473a28e3db8f806e", "v1.9.0"}},
		{"empty spec", "kubevirt", `{}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0"},
			UpstreamTarget{"v1.9.0", "quay.io/kubevirt", "26d9c18701d6b1d6d39b6ef1473a28e3db8f806e", "v1.9.0"}},
		{"other namespace", "virt", `{"imageTag":"v1.9.0"}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0"},
			UpstreamTarget{"v1.9.0", "quay.io/kubevirt", "2d3ec63473cfebdf4bf87c88daadfc76cda87f42", "v1.9.0"}},
		{"registry and tag in the spec, prefixed operator image", "kubevirt", `{"imageRegistry":"mirror.example.com/kubevirt","imageTag":"v1.9.0"}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "registry.example.com:5000/mirror/kv-virt-operator:v1.9.0"},
			UpstreamTarget{"v1.9.0", "mirror.example.com/kubevirt", "d99802b688238a98368dda9dd6359e0f363c1472", "v1.9.0"}},
		{"prefixed operator image, no spec", "kubevirt", `{}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "registry.example.com:5000/mirror/kv-virt-operator:v1.9.0"},
			UpstreamTarget{"v1.9.0", "registry.example.com:5000/mirror", "6d562ca03e4050e2a23a9a3de613ce4995b5a05c", "v1.9.0"}},
		{"string fields", "kubevirt", `{"imageTag":"v1.9.0","imagePullPolicy":"Always","imagePullSecrets":[{"name":"pull"},{"name":"other"}],"monitorNamespace":"monitoring","serviceMonitorNamespace":"svcmon","monitorAccount":"prom","uninstallStrategy":"RemoveWorkloads","productName":"acme","productVersion":"1.2.3","productComponent":"virt","synchronizationPort":"9190","configuration":{"migrations":{"network":"migration-net"}}}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0"},
			UpstreamTarget{"v1.9.0", "quay.io/kubevirt", "b05adf769150258f32e64fa93f4411333be7ad1d", "v1.9.0"}},
		{"an empty pull-secret list", "kubevirt", `{"imageTag":"v1.9.0","imagePullSecrets":[]}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0"},
			UpstreamTarget{"v1.9.0", "quay.io/kubevirt", "54bde0e2cb834f2bd1d610d59e793a099b8e941e", "v1.9.0"}},
		{"an empty migration network", "kubevirt", `{"imageTag":"v1.9.0","configuration":{"migrations":{"network":""}}}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0"},
			UpstreamTarget{"v1.9.0", "quay.io/kubevirt", "9f6a42edc552131b04ddddedd73af366b1c0fee9", "v1.9.0"}},
		{"gates on, Beta gates disabled, a hypervisor", "kubevirt", `{"imageTag":"v1.9.0","configuration":{"roleAggregationStrategy":"Manual","hypervisors":[{"name":"mshv"},{"name":"kvm"}],"developerConfiguration":{"featureGates":["Plugins","VMStatsCollector","OptOutRoleAggregation","ConfigurableHypervisor"],"disabledFeatureGates":["Template","ExternalNetResourceInjection"]}}}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0"},
			UpstreamTarget{"v1.9.0", "quay.io/kubevirt", "8452630a1b732445b264abf1da8b4b84bf4c3230", "v1.9.0"}},
		{"a hypervisor without its gate", "kubevirt", `{"imageTag":"v1.9.0","configuration":{"hypervisors":[{"name":"mshv"}]}}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0"},
			UpstreamTarget{"v1.9.0", "quay.io/kubevirt", "26d9c18701d6b1d6d39b6ef1473a28e3db8f806e", "v1.9.0"}},
		{"persistentReservationConfiguration wins, virt-template off", "kubevirt", `{"imageTag":"v1.9.0","configuration":{"persistentReservationConfiguration":{"enabled":false},"virtTemplateDeployment":{"enabled":false},"developerConfiguration":{"featureGates":["PersistentReservation"]}}}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0"},
			UpstreamTarget{"v1.9.0", "quay.io/kubevirt", "efe888db8b084ced8066d3a5605c55bf88704ed6", "v1.9.0"}},
		{"the PersistentReservation gate listed", "kubevirt", `{"imageTag":"v1.9.0","configuration":{"developerConfiguration":{"featureGates":["PersistentReservation"]}}}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0"},
			UpstreamTarget{"v1.9.0", "quay.io/kubevirt", "ddfa3815481a4cc22510e1d22a757f57085e747a", "v1.9.0"}},
		{"digest, KUBEVIRT_VERSION, a component image, pass-through", "kubevirt", `{}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator@sha256:0000000000000000000000000000000000000000000000000000000000000001", "KUBEVIRT_VERSION": "v1.9.0", "VIRT_API_IMAGE": "quay.io/kubevirt/virt-api@sha256:0000000000000000000000000000000000000000000000000000000000000002", "SIDECAR_SHIM_IMAGE": "quay.io/kubevirt/sidecar-shim:v1.9.0", "KV_IO_EXTRA_ENV_FOO": "a=b", "KV_IO_EXTRA_ENV_BAR": "1"},
			UpstreamTarget{"v1.9.0", "quay.io/kubevirt", "80f7b81d86da2a22d620b64097a27aff4cbd73a4", "v1.9.0"}},
		{"a tag then a digest", "kubevirt", `{}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0@sha256:0000000000000000000000000000000000000000000000000000000000000001"},
			UpstreamTarget{"v1.9.0@sha256:0000000000000000000000000000000000000000000000000000000000000001", "quay.io/kubevirt", "66a6723a6ece096508d5bcc3923c6c584de88149", "v1.9.0"}},
		{"OPERATOR_IMAGE", "kubevirt", `{"imageTag":"v1.9.0"}`,
			MapEnv{"OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0"},
			UpstreamTarget{"v1.9.0", "quay.io/kubevirt", "26d9c18701d6b1d6d39b6ef1473a28e3db8f806e", "v1.9.0"}},
		{"content of structured fields", "kubevirt", `{"imageTag":"v1.9.0","infra":{"replicas":3},"workloads":{"nodePlacement":{"nodeSelector":{"a":"b"}}},"workloadUpdateStrategy":{"workloadUpdateMethods":["LiveMigrate"]},"certificateRotateStrategy":{"selfSigned":{"ca":{"duration":"48h"}}},"customizeComponents":{"patches":[{"resourceName":"virt-api","resourceType":"Deployment","patch":"{\"metadata\":{\"labels\":{\"a\":\"b\"}}}","type":"strategic"},{"resourceName":"*","resourceType":"Service","patch":"{}","type":"merge"}],"flags":{"api":{"v":"4"}}},"configuration":{"migrations":{"parallelMigrationsPerCluster":3}}}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0"},
			UpstreamTarget{"v1.9.0", "quay.io/kubevirt", "26d9c18701d6b1d6d39b6ef1473a28e3db8f806e", "v1.9.0"}},
		{"empty flags", "kubevirt", `{"imageTag":"v1.9.0","customizeComponents":{"flags":{}}}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.9.0"},
			UpstreamTarget{"v1.9.0", "quay.io/kubevirt", "26d9c18701d6b1d6d39b6ef1473a28e3db8f806e", "v1.9.0"}},
	} {
		tc.check(t)
	}
}

// Upstream's v1.8.4 operator (v1.8.0 to v1.8.3 derive the config alike): a
// gate counts only listed, VMStatsCollector and Plugins have no keys, and
// persistentReservationConfiguration is unknown to it; it is the operator's
// release that decides, not the release it installs.
func TestUpstreamTargetOfV18(t *testing.T) {
	for _, tc := range []upstreamCase{
		{"imageTag only", "kubevirt", `{"imageTag":"v1.8.4"}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.8.4"},
			UpstreamTarget{"v1.8.4", "quay.io/kubevirt", "0b862b5055cacaa3de8240463b634da97b943b97", "v1.8.4"}},
		{"Beta gates off unless listed", "kubevirt", `{"imageTag":"v1.8.4","configuration":{"developerConfiguration":{"disabledFeatureGates":["Template"]}}}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.8.4"},
			UpstreamTarget{"v1.8.4", "quay.io/kubevirt", "0b862b5055cacaa3de8240463b634da97b943b97", "v1.8.4"}},
		{"gates listed", "kubevirt", `{"imageTag":"v1.8.4","configuration":{"roleAggregationStrategy":"Manual","persistentReservationConfiguration":{"enabled":false},"developerConfiguration":{"featureGates":["Template","Plugins","VMStatsCollector","PersistentReservation","ExternalNetResourceInjection","OptOutRoleAggregation"]}}}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.8.4"},
			UpstreamTarget{"v1.8.4", "quay.io/kubevirt", "4dc5887cdf3e46c7b00fa2a743c28194abf4f8c6", "v1.8.4"}},
		{"the v1.8 operator installing v1.9.0", "kubevirt", `{"imageTag":"v1.9.0","imagePullPolicy":"IfNotPresent"}`,
			MapEnv{"VIRT_OPERATOR_IMAGE": "quay.io/kubevirt/virt-operator:v1.8.4"},
			UpstreamTarget{"v1.9.0", "quay.io/kubevirt", "fdedba2501d105a11ea28f66276ee78a456c1140", "v1.8.4"}},
	} {
		tc.check(t)
	}
}

// The ID is upstream's, not this operator's, for the same CR and environment.
func TestUpstreamTargetIsNotOurs(t *testing.T) {
	kv := newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.ImageTag = "v1.9.0" })
	env := MapEnv{EnvVirtOperatorImage: "quay.io/kubevirt/virt-operator:v1.9.0"}
	got, err := UpstreamTargetOf(kv, nil, env)
	if err != nil {
		t.Fatal(err)
	}
	if ours := mustConfig(t, kv, env); got.ID == ours.ID || got.Version != ours.KubeVirtVersion || got.Registry != ours.Registry {
		t.Errorf("upstream's %+v, ours %s %s %s", got, ours.ID, ours.KubeVirtVersion, ours.Registry)
	}
}

// An operator whose rules are not known here, or that cannot be told, is
// refused by name rather than guessed at.
func TestUpstreamTargetOfRefuses(t *testing.T) {
	kv := newKubeVirt()
	for _, tc := range []struct {
		env  MapEnv
		want string
	}{
		{MapEnv{}, "sets no VIRT_OPERATOR_IMAGE"},
		{MapEnv{EnvVirtOperatorImage: ""}, "sets no VIRT_OPERATOR_IMAGE"},
		{MapEnv{EnvVirtOperatorImage: "quay.io/kubevirt/virt-operator:v1.7.4"}, `upstream's v1.7.4 operator is not known here (known: v1.9, v1.8)`},
		{MapEnv{EnvVirtOperatorImage: "quay.io/kubevirt/virt-operator:v1.10.0"}, "v1.10.0 operator is not known here"},
		{MapEnv{EnvVirtOperatorImage: "quay.io/kubevirt/virt-operator:latest"}, `"quay.io/kubevirt/virt-operator:latest" names no release`},
		{MapEnv{EnvVirtOperatorImage: "quay.io/kubevirt/virt-operator@sha256:01"}, "names no release (a tag like v1.9.0) and KUBEVIRT_VERSION does not either"},
		{MapEnv{EnvVirtOperatorImage: "quay.io/kubevirt/virt-operator@sha256:01", EnvKubeVirtVersion: "devel"}, "names no release"},
	} {
		if _, err := UpstreamTargetOf(kv, nil, tc.env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error containing %q", tc.env, err, tc.want)
		}
	}
	if _, err := UpstreamTargetOf(nil, nil, MapEnv{}); err == nil {
		t.Error("no KubeVirt: no error")
	}
	if _, err := UpstreamTargetOf(kv, nil, MapEnv{EnvOperatorImage: "quay.io/kubevirt/virt-operator@sha256:01", EnvKubeVirtVersion: "v1.9.0"}); err != nil {
		t.Errorf("a digest with KUBEVIRT_VERSION names the release: %v", err)
	}
}

// Whatever the environment and spec strings, an ID of 40 hex digits or an
// error; never a panic.
func FuzzUpstreamTargetOf(f *testing.F) {
	f.Add("quay.io/kubevirt/virt-operator:v1.9.0", "", "KV_IO_EXTRA_ENV_A", "a=b", "v1.9.0", "")
	f.Add("virt-operator", "v1.8.4", "KV_IO_EXTRA_ENV_", "", "", "r/x")
	f.Add("/virt-operator@sha256:1", "v1.9.1-rc.0", "VIRT_API_IMAGE", "=", "v", "")
	f.Fuzz(func(t *testing.T, image, version, name, value, tag, registry string) {
		kv := newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.ImageTag, kv.Spec.ImageRegistry = tag, registry })
		env := MapEnv{EnvVirtOperatorImage: image, EnvKubeVirtVersion: version, name: value}
		got, err := UpstreamTargetOf(kv, []string{value}, env)
		if err == nil && len(got.ID) != 40 {
			t.Fatalf("ID %q", got.ID)
		}
	})
}
