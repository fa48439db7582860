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
// returned. PlanTemplate calls it only while the rollout is in progress.
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

// HandlerCertSecret is the Secret of virt-handler's client certificate. The
// rollout keeps it mounted while old and new virt-handlers run side by side,
// and detaches it (drops its volume from the template) only once the rollout
// has succeeded, so a migration between an old and a new node keeps its TLS.
const HandlerCertSecret = "kubevirt-virt-handler-certs"

// CarriedOverAnnotation marks a virt-handler DaemonSet whose template carries
// settings of the previous template that the target drops (its value says
// which). It is how the operator knows, also after a restart, that the template
// it wrote is not the clean target one and must be replaced once the rollout
// has succeeded; the desired-hash annotation stays the clean target's, so the
// carried settings never look like a spec change to the canary.
const CarriedOverAnnotation = "kubevirt.io/virt-operator-carried-over"

// Carried-over settings, as listed in CarriedOverAnnotation.
const (
	CarriedTLSArgs     = "tls-args"
	CarriedHandlerCert = "handler-cert-secret"
)

// TemplateWrite is which virt-handler template to write and how to mark it.
type TemplateWrite struct {
	// DaemonSet is the desired DaemonSet, or a copy carrying settings of the
	// running one (and CarriedOverAnnotation).
	DaemonSet *appsv1.DaemonSet
	// Carried lists what it carries; empty for the clean target template.
	Carried []string
	// DropCarried: the live template carries settings the target drops and the
	// rollout is over, so the clean template must be written now.
	DropCarried bool
}

// PlanTemplate decides the template for one reconcile. While the rollout is in
// progress (the spec changed, or the phase is active) the running template's
// TLS arguments and handler certificate Secret that desired lacks are carried
// over; once it has succeeded (or failed: the rollback writes the previous
// template, which has them anyway) desired is written clean, and DropCarried
// says whether the live DaemonSet still has to lose what it carries. live is
// the DaemonSet as it runs; desired is not modified.
func PlanTemplate(live, desired *appsv1.DaemonSet, phase Phase, specChanged bool) TemplateWrite {
	if live == nil || desired == nil {
		return TemplateWrite{DaemonSet: desired}
	}
	_, liveCarries := live.Annotations[CarriedOverAnnotation]
	if !specChanged && !phase.Active() {
		return TemplateWrite{DaemonSet: desired, DropCarried: liveCarries}
	}
	out := PreserveTLSArgs(live, desired)
	var carried []string
	if out != desired {
		carried = append(carried, CarriedTLSArgs)
	}
	if withCert := preserveSecretVolume(live, out, HandlerCertSecret); withCert != out {
		out = withCert
		carried = append(carried, CarriedHandlerCert)
	}
	if len(carried) == 0 {
		return TemplateWrite{DaemonSet: desired, DropCarried: liveCarries}
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[CarriedOverAnnotation] = strings.Join(carried, ",")
	return TemplateWrite{DaemonSet: out, Carried: carried}
}

// CleanupStrategy is the update strategy for the write that drops what the
// rollout carried over, and for as long as that clean template is still
// reaching the nodes: the fast step. Every node already runs the target
// version, which has proven itself; only the carried settings go, and at
// maxUnavailable 1 that would replace every pod once more, one node at a time
// (hours on a large cluster). held (Decision.CleanupHeld): migrations hold
// nodes, and which pods the clean-up has still to replace cannot be told from
// their stamps, so it waits under OnDelete. Nil when no clean-up runs: the
// decision's strategy holds. live is the DaemonSet as it runs.
func CleanupStrategy(phase Phase, tmpl TemplateWrite, live *appsv1.DaemonSet, p Policy, held bool) *appsv1.DaemonSetUpdateStrategy {
	if phase != PhaseSuccessful || live == nil {
		return nil
	}
	fast := RollingUpdate(p.FastStep)
	s := live.Spec.UpdateStrategy
	cleaning := (SameStrategy(s, *fast) || s.Type == appsv1.OnDeleteDaemonSetStrategyType) && templateRolling(live)
	switch {
	case !tmpl.DropCarried && !cleaning:
		return nil
	case held:
		return OnDelete()
	}
	return fast
}

// templateRolling: the DaemonSet has not yet put its template on every pod it
// schedules (an unavailable but updated pod does not count: a node that is down
// must not keep the fast step).
func templateRolling(ds *appsv1.DaemonSet) bool {
	st := ds.Status
	return st.ObservedGeneration < ds.Generation || st.UpdatedNumberScheduled < st.DesiredNumberScheduled
}

// preserveSecretVolume returns a copy of desired that mounts the Secret secret
// as live does (the volume, and each container's mounts of it), when live
// mounts it and desired does not; otherwise desired itself.
func preserveSecretVolume(live, desired *appsv1.DaemonSet, secret string) *appsv1.DaemonSet {
	vol := secretVolume(live.Spec.Template.Spec.Volumes, secret)
	if vol == nil || secretVolume(desired.Spec.Template.Spec.Volumes, secret) != nil {
		return desired
	}
	for _, v := range desired.Spec.Template.Spec.Volumes {
		if v.Name == vol.Name {
			return desired // the name now means something else: not ours to override
		}
	}
	out := desired.DeepCopy()
	spec := &out.Spec.Template.Spec
	spec.Volumes = append(spec.Volumes, *vol.DeepCopy())
	for i := range spec.Containers {
		lc := containerNamed(live.Spec.Template.Spec.Containers, spec.Containers[i].Name)
		if lc == nil {
			continue
		}
		for _, m := range lc.VolumeMounts {
			if m.Name == vol.Name && !mountsAt(spec.Containers[i].VolumeMounts, m.MountPath) {
				spec.Containers[i].VolumeMounts = append(spec.Containers[i].VolumeMounts, m)
			}
		}
	}
	return out
}

func secretVolume(vols []corev1.Volume, secret string) *corev1.Volume {
	for i := range vols {
		if s := vols[i].Secret; s != nil && s.SecretName == secret {
			return &vols[i]
		}
	}
	return nil
}

func mountsAt(mounts []corev1.VolumeMount, path string) bool {
	for _, m := range mounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}
