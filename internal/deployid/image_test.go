package deployid

import (
	"strings"
	"testing"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/version"
)

func TestParseOperatorImage(t *testing.T) {
	tests := []struct {
		name, image, envVersion string
		want                    parsedOperatorImage
	}{
		{"registry with port, tag", "reg:1234/kubevirt/virt-operator:latest", "", parsedOperatorImage{"reg:1234/kubevirt", "", "latest"}},
		{"digest without KUBEVIRT_VERSION gives latest", "kubevirt/virt-operator@sha256:abcdef", "", parsedOperatorImage{"kubevirt", "", "latest"}},
		{"digest takes KUBEVIRT_VERSION", "kubevirt/virt-operator@sha256:abcdef", "v1.2.3", parsedOperatorImage{"kubevirt", "", "v1.2.3"}},
		{"no suffix gives latest even with KUBEVIRT_VERSION", "registry/kubevirt/virt-operator", "v9", parsedOperatorImage{"registry/kubevirt", "", "latest"}},
		{"image tag beats KUBEVIRT_VERSION, prefix parsed", "acme.com/kubevirt/my-virt-operator:v3.0.0", "v3.0.0-env.var", parsedOperatorImage{"acme.com/kubevirt", "my-", "v3.0.0"}},
		{"no match falls back to KUBEVIRT_VERSION", "blablabla", "v2", parsedOperatorImage{"", "", "v2"}},
		{"no match and no version gives latest", "blablabla", "", parsedOperatorImage{"", "", "latest"}},
		{"empty image", "", "", parsedOperatorImage{"", "", "latest"}},
		{"no slash does not match", "virt-operator:v1", "v2", parsedOperatorImage{"", "", "v2"}},
		{"tag and digest keep the tag", "r/virt-operator:v1@sha256:ab", "v2", parsedOperatorImage{"r", "", "v1"}},
		{"registry is greedy", "a/b/c/x-virt-operator:t", "", parsedOperatorImage{"a/b/c", "x-", "t"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseOperatorImage(tt.image, tt.envVersion); got != tt.want {
				t.Errorf("parseOperatorImage(%q, %q) = %+v, want %+v", tt.image, tt.envVersion, got, tt.want)
			}
		})
	}
}

// TestReleaseFromTheEnvironment: how the KubeVirt release, registry and prefix, and
// the image that dumps the strategy, follow from the operator's environment and spec.
func TestReleaseFromTheEnvironment(t *testing.T) {
	defer func(v string) { version.Version = v }(version.Version)
	version.Version = "v0.3.0" // this operator's own release
	tests := []struct {
		name                                             string
		env                                              MapEnv
		spec                                             func(*v1.KubeVirt)
		wantRegistry, wantPrefix, wantVersion, wantOpImg string
	}{
		{
			name: "a release's image, registry with port", env: MapEnv{EnvVirtOperatorImage: "reg:1234/kubevirt/virt-operator:v1.9.0"},
			wantRegistry: "reg:1234/kubevirt", wantVersion: "v1.9.0", wantOpImg: "reg:1234/kubevirt/virt-operator:v1.9.0",
		},
		{
			name: "this operator's own image (not a release tag)", env: MapEnv{EnvVirtOperatorImage: "ghcr.io/acme/virt-operator:devel"},
			wantRegistry: DefaultRegistry, wantVersion: "v1.9.0", wantOpImg: "ghcr.io/acme/virt-operator:devel",
		},
		{
			name: "this operator's own image (tagged with its own version)", env: MapEnv{EnvVirtOperatorImage: "ghcr.io/acme/virt-operator:v0.3.0"},
			wantRegistry: DefaultRegistry, wantVersion: "v1.9.0", wantOpImg: "ghcr.io/acme/virt-operator:v0.3.0",
		},
		{
			name: "this operator's own repository, a release-like tag that is not this build's", env: MapEnv{EnvVirtOperatorImage: version.Repository + ":v0.4.0"},
			wantRegistry: DefaultRegistry, wantVersion: "v1.9.0", wantOpImg: version.Repository + ":v0.4.0",
		},
		{
			name: "this operator's own repository, by digest", env: MapEnv{EnvVirtOperatorImage: version.Repository + ":v1.0.0@sha256:0123", EnvKubeVirtVersion: "v1.8.4"},
			wantRegistry: DefaultRegistry, wantVersion: "v1.8.4", wantOpImg: version.Repository + ":v1.0.0@sha256:0123",
		},
		{
			name: "own image and KUBEVIRT_VERSION", env: MapEnv{EnvVirtOperatorImage: "ghcr.io/acme/virt-operator:latest", EnvKubeVirtVersion: "v1.8.4"},
			wantRegistry: DefaultRegistry, wantVersion: "v1.8.4", wantOpImg: "ghcr.io/acme/virt-operator:latest",
		},
		{
			name: "a digest names a release with KUBEVIRT_VERSION", env: MapEnv{EnvVirtOperatorImage: "kubevirt/virt-operator@sha256:abcdef", EnvKubeVirtVersion: "v1.8.4"},
			wantRegistry: "kubevirt", wantVersion: "v1.8.4", wantOpImg: "kubevirt/virt-operator@sha256:abcdef",
		},
		{
			name: "a digest alone is this operator's image", env: MapEnv{EnvVirtOperatorImage: "kubevirt/virt-operator@sha256:abcdef"},
			wantRegistry: DefaultRegistry, wantVersion: "v1.9.0", wantOpImg: "kubevirt/virt-operator@sha256:abcdef",
		},
		{
			name: "spec registry and tag of a known line keep the operator's own image", env: MapEnv{EnvVirtOperatorImage: "ghcr.io/acme/virt-operator:devel"},
			spec:         func(kv *v1.KubeVirt) { kv.Spec.ImageRegistry, kv.Spec.ImageTag = "mirror.io/kv", "v1.8.4" },
			wantRegistry: "mirror.io/kv", wantVersion: "v1.8.4", wantOpImg: "ghcr.io/acme/virt-operator:devel",
		},
		{
			name: "a release the builtin generator does not know is dumped by its own operator", env: MapEnv{EnvVirtOperatorImage: "ghcr.io/acme/virt-operator:devel"},
			spec:         func(kv *v1.KubeVirt) { kv.Spec.ImageTag = "v1.7.4" },
			wantRegistry: DefaultRegistry, wantVersion: "v1.7.4", wantOpImg: "quay.io/kubevirt/virt-operator:v1.7.4",
		},
		{
			name:         "prefix and tag over KUBEVIRT_VERSION, as upstream",
			env:          MapEnv{EnvVirtOperatorImage: "acme.com/kubevirt/my-virt-operator:v3.0.0", EnvKubeVirtVersion: "v3.0.0-env.var"},
			wantRegistry: "acme.com/kubevirt", wantPrefix: "my-", wantVersion: "v3.0.0", wantOpImg: "acme.com/kubevirt/my-virt-operator:v3.0.0",
		},
		{
			name: "OPERATOR_IMAGE is the fallback", env: MapEnv{EnvOperatorImage: "old/virt-operator:v1.8.4"},
			wantRegistry: "old", wantVersion: "v1.8.4", wantOpImg: "old/virt-operator:v1.8.4",
		},
		{
			name:         "VIRT_OPERATOR_IMAGE wins over OPERATOR_IMAGE",
			env:          MapEnv{EnvOperatorImage: "old/virt-operator:v1.8.4", EnvVirtOperatorImage: "new/virt-operator:v1.9.0"},
			wantRegistry: "new", wantVersion: "v1.9.0", wantOpImg: "new/virt-operator:v1.9.0",
		},
		{
			name: "no operator image at all", env: MapEnv{},
			wantRegistry: DefaultRegistry, wantVersion: "v1.9.0", wantOpImg: "quay.io/kubevirt/virt-operator:v1.9.0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kv := newKubeVirt()
			if tt.spec != nil {
				tt.spec(kv)
			}
			cfg := mustConfig(t, kv, tt.env)
			if cfg.Registry != tt.wantRegistry || cfg.ImagePrefix != tt.wantPrefix || cfg.KubeVirtVersion != tt.wantVersion {
				t.Errorf("registry/prefix/version = %q/%q/%q, want %q/%q/%q",
					cfg.Registry, cfg.ImagePrefix, cfg.KubeVirtVersion, tt.wantRegistry, tt.wantPrefix, tt.wantVersion)
			}
			if got := cfg.Image(Operator); got != tt.wantOpImg {
				t.Errorf("operator image = %q, want %q", got, tt.wantOpImg)
			}
		})
	}
}

func TestComponentImages(t *testing.T) {
	env := MapEnv{EnvVirtOperatorImage: "acme.com/kv/my-virt-operator:v3.0.0", "VIRT_LAUNCHER_IMAGE": "mirror/launcher@sha256:aa"}
	cfg := mustConfig(t, newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.ImageRegistry = "spec.io/kv" }), env)
	tests := map[Component]string{
		API:          "spec.io/kv/my-virt-api:v3.0.0",
		Handler:      "spec.io/kv/my-virt-handler:v3.0.0",
		Launcher:     "mirror/launcher@sha256:aa", // env overrides win over the spec and stay verbatim
		GuestfsTools: "spec.io/kv/my-libguestfs-tools:v3.0.0",
		Operator:     "spec.io/kv/my-virt-operator:v3.0.0", // not a known line: its own operator, from the spec's registry
		"unknown":    "",
	}
	for comp, want := range tests {
		if got := cfg.Image(comp); got != want {
			t.Errorf("Image(%s) = %q, want %q", comp, got, want)
		}
	}
	sha := "sha256:" + strings.Repeat("be", 32)
	digest := mustConfig(t, newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.ImageTag = sha }), MapEnv{EnvVirtOperatorImage: "r/virt-operator:v1.9.0"})
	if got := digest.Image(Controller); got != "r/virt-controller@"+sha {
		t.Errorf("digest version: Image(controller) = %q", got)
	}
	if got := (&Config{KubeVirtVersion: "v1"}).Image(API); got != "virt-api:v1" {
		t.Errorf("no registry: Image(api) = %q, want a bare name", got)
	}
}

func TestEveryComponentHasAnOverrideVariable(t *testing.T) {
	for _, s := range componentSources {
		if s.component == Operator {
			continue
		}
		env := withEnv(baseEnv(), s.envVar, "override/"+string(s.component)+":x")
		cfg := mustConfig(t, newKubeVirt(), env)
		if got := cfg.Image(s.component); got != "override/"+string(s.component)+":x" {
			t.Errorf("%s: Image(%s) = %q", s.envVar, s.component, got)
		}
		if cfg.ID == mustConfig(t, newKubeVirt(), baseEnv()).ID {
			t.Errorf("%s: override does not change the ID", s.envVar)
		}
	}
	if got := len(Components()); got != 13 {
		t.Errorf("Components() has %d entries, want 13", got)
	}
}
