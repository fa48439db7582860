package rollout

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

func handlerDS(args ...string) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{}
	ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "virt-handler", Command: []string{"virt-handler"}, Args: args}}
	return ds
}

func TestPreserveTLSArgs(t *testing.T) {
	base := []string{"--port", "8443", "-v", "2"}
	withTLS := append(slices.Clone(base), "--migration-cn-types", "migration", "--tls-min-version=1.2")
	cases := []struct {
		name       string
		live, want []string
		same       bool
	}{
		{"live has TLS, desired not: kept", withTLS, withTLS, false},
		{"both have TLS: desired untouched", withTLS, withTLS, true},
		{"live without TLS: desired untouched", base, base, true},
		{"a flag followed by another flag takes no value", []string{"--tls-insecure", "--port", "1"}, append(slices.Clone(base), "--tls-insecure"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			desiredArgs := base
			if tc.same && slices.Equal(tc.want, withTLS) {
				desiredArgs = withTLS
			}
			desired := handlerDS(desiredArgs...)
			before := slices.Clone(desired.Spec.Template.Spec.Containers[0].Args)
			got := PreserveTLSArgs(handlerDS(tc.live...), desired)
			if (got == desired) != tc.same {
				t.Errorf("returned desired itself: %v, want %v", got == desired, tc.same)
			}
			if args := got.Spec.Template.Spec.Containers[0].Args; !slices.Equal(args, tc.want) {
				t.Errorf("args %v, want %v", args, tc.want)
			}
			if !slices.Equal(desired.Spec.Template.Spec.Containers[0].Args, before) {
				t.Error("desired was modified")
			}
		})
	}
	if PreserveTLSArgs(nil, nil) != nil {
		t.Error("nil in, nil out")
	}
}
