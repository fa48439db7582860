package rollout

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TLSFlags are the flags PreserveTLSArgs carries over. Each takes a value, as the
// next argument or after "=". Flags starting with "--tls-" are carried too.
var TLSFlags = []string{"--migration-cn-types"}

// PreserveTLSArgs keeps the TLS arguments of the running DaemonSet while it rolls
// out: if a container of live has TLS flags that the same container of desired
// lacks, a copy of desired with those flags (and values) appended is returned, so
// old and new virt-handlers keep talking TLS the same way to each other (in-flight
// migrations) until every node runs the new one. Otherwise desired itself is
// returned. The controller calls it only while the rollout has not completed
// (SpecChanged or an active phase), and detaches the handler certificate Secret
// only once a Decision says Successful.
func PreserveTLSArgs(live, desired *appsv1.DaemonSet) *appsv1.DaemonSet {
	if live == nil || desired == nil {
		return desired
	}
	var out *appsv1.DaemonSet
	for i := range desired.Spec.Template.Spec.Containers {
		dc := &desired.Spec.Template.Spec.Containers[i]
		lc := containerNamed(live.Spec.Template.Spec.Containers, dc.Name)
		if lc == nil {
			continue
		}
		has := flagNames(append(append([]string(nil), dc.Command...), dc.Args...))
		keepCmd := missingTLS(lc.Command, has)
		keepArgs := missingTLS(lc.Args, has)
		if len(keepCmd) == 0 && len(keepArgs) == 0 {
			continue
		}
		if out == nil {
			out = desired.DeepCopy()
		}
		oc := &out.Spec.Template.Spec.Containers[i]
		oc.Command = append(oc.Command, keepCmd...)
		oc.Args = append(oc.Args, keepArgs...)
	}
	if out == nil {
		return desired
	}
	return out
}

func containerNamed(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

func isTLSFlag(name string) bool {
	if strings.HasPrefix(name, "--tls-") {
		return true
	}
	for _, f := range TLSFlags {
		if name == f {
			return true
		}
	}
	return false
}

// flagNames is the set of flag names (without "=value") in args.
func flagNames(args []string) map[string]bool {
	m := map[string]bool{}
	for _, a := range args {
		if strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a, "=")
			m[name] = true
		}
	}
	return m
}

// missingTLS returns the TLS flags of args (with their values) not in has.
func missingTLS(args []string, has map[string]bool) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		name, _, inline := strings.Cut(args[i], "=")
		if !isTLSFlag(name) || has[name] {
			continue
		}
		out = append(out, args[i])
		if !inline && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			out = append(out, args[i+1])
			i++
		}
	}
	return out
}
