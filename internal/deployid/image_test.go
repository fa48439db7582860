package deployid

import (
	"testing"

	v1 "github.com/virt-operator/virt-operator/api/v1"
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

// TestUpstreamImageExamples runs §2.3's examples end to end through FromKubeVirt.
func TestUpstreamImageExamples(t *testing.T) {
	tests := []struct {
		name                                             string
		env                                              MapEnv
		spec                                             func(*v1.KubeVirt)
		wantRegistry, wantPrefix, wantVersion, wantOpImg string
	}{
		{
			name: "registry with port", env: MapEnv{EnvVirtOperatorImage: "reg:1234/kubevirt/virt-operator:latest"},
			wantRegistry: "reg:1234/kubevirt", wantVersion: "latest", wantOpImg: "reg:1234/kubevirt/virt-operator:latest",
		},
		{
			name: "digest", env: MapEnv{EnvVirtOperatorImage: "kubevirt/virt-operator@sha256:abcdef"},
			wantRegistry: "kubevirt", wantVersion: "latest", wantOpImg: "kubevirt/virt-operator@sha256:abcdef",
		},
		{
			name: "spec registry rewrites the operator image", env: MapEnv{EnvVirtOperatorImage: "registry/kubevirt/virt-operator"},
			spec:         func(kv *v1.KubeVirt) { kv.Spec.ImageRegistry = "quay.io/kubevirt" },
			wantRegistry: "quay.io/kubevirt", wantVersion: "latest", wantOpImg: "quay.io/kubevirt/virt-operator:latest",
		},
		{
			name:         "prefix and tag over KUBEVIRT_VERSION",
			env:          MapEnv{EnvVirtOperatorImage: "acme.com/kubevirt/my-virt-operator:v3.0.0", EnvKubeVirtVersion: "v3.0.0-env.var"},
			wantRegistry: "acme.com/kubevirt", wantPrefix: "my-", wantVersion: "v3.0.0", wantOpImg: "acme.com/kubevirt/my-virt-operator:v3.0.0",
		},
		{
			name: "OPERATOR_IMAGE is the fallback", env: MapEnv{EnvOperatorImage: "old/virt-operator:v1"},
			wantRegistry: "old", wantVersion: "v1", wantOpImg: "old/virt-operator:v1",
		},
		{
			name:         "VIRT_OPERATOR_IMAGE wins over OPERATOR_IMAGE",
			env:          MapEnv{EnvOperatorImage: "old/virt-operator:v1", EnvVirtOperatorImage: "new/virt-operator:v2"},
			wantRegistry: "new", wantVersion: "v2", wantOpImg: "new/virt-operator:v2",
		},
		{
			// Our decision (see setImages): the prefix stays in the operator image.
			name:         "spec tag keeps the prefix in the operator image",
			env:          MapEnv{EnvVirtOperatorImage: "acme.com/kubevirt/my-virt-operator:v3.0.0"},
			spec:         func(kv *v1.KubeVirt) { kv.Spec.ImageTag = "v4" },
			wantRegistry: "acme.com/kubevirt", wantPrefix: "my-", wantVersion: "v4", wantOpImg: "acme.com/kubevirt/my-virt-operator:v4",
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
	env := MapEnv{EnvVirtOperatorImage: "acme.com/kv/my-virt-operator:v3", "VIRT_LAUNCHER_IMAGE": "mirror/launcher@sha256:aa"}
	cfg := mustConfig(t, newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.ImageRegistry = "spec.io/kv" }), env)
	tests := map[Component]string{
		API:          "spec.io/kv/my-virt-api:v3",
		Handler:      "spec.io/kv/my-virt-handler:v3",
		Launcher:     "mirror/launcher@sha256:aa", // env overrides win over the spec and stay verbatim
		GuestfsTools: "spec.io/kv/my-libguestfs-tools:v3",
		Operator:     "spec.io/kv/my-virt-operator:v3",
		"unknown":    "",
	}
	for comp, want := range tests {
		if got := cfg.Image(comp); got != want {
			t.Errorf("Image(%s) = %q, want %q", comp, got, want)
		}
	}
	digest := mustConfig(t, newKubeVirt(func(kv *v1.KubeVirt) { kv.Spec.ImageTag = "sha256:beef" }), MapEnv{EnvVirtOperatorImage: "r/virt-operator:v1"})
	if got := digest.Image(Controller); got != "r/virt-controller@sha256:beef" {
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
