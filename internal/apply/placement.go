package apply

import (
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Component names: the Deployments, the DaemonSet and their main containers.
const (
	VirtAPI                       = "virt-api"
	VirtController                = "virt-controller"
	VirtExportProxy               = "virt-exportproxy"
	VirtSynchronizationController = "virt-synchronization-controller"
	VirtHandler                   = "virt-handler"
)

// place applies spec.infra to every Deployment (its replicas to every one but
// virt-template's) and spec.workloads to the DaemonSets, as upstream does (§4.8).
// Without a nodePlacement, Deployments go to control-plane nodes (preferring
// non-workers, tolerating the control-plane taints) and DaemonSets anywhere; every
// pod is kept on Linux nodes.
func place(obj client.Object, infra, workloads *v1.ComponentConfig) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		InjectPlacement(&o.Spec.Template.Spec, infra, ControlPlane)
		if infra != nil && infra.Replicas != nil && !strings.HasPrefix(o.Name, "virt-template") {
			r := int32(*infra.Replicas)
			o.Spec.Replicas = &r
		}
	case *appsv1.DaemonSet:
		InjectPlacement(&o.Spec.Template.Spec, workloads, AnyNode)
	}
}

// DefaultPlacement is where a component goes when the CR places it nowhere.
type DefaultPlacement int

const (
	// AnyNode: only the Linux node selector (virt-handler).
	AnyNode DefaultPlacement = iota
	// ControlPlane: control-plane (or master) nodes required, non-workers
	// preferred, their taints tolerated (the control plane, the strategy Job).
	ControlPlane
)

// Node labels and taints of the default placement.
const (
	labelControlPlane = "node-role.kubernetes.io/control-plane"
	labelMaster       = "node-role.kubernetes.io/master"
	labelWorker       = "node-role.kubernetes.io/worker"
)

func defaultNodePlacement(d DefaultPlacement) *v1.NodePlacement {
	if d != ControlPlane {
		return &v1.NodePlacement{}
	}
	exists := func(key string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpExists}}}
	}
	return &v1.NodePlacement{
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{exists(labelControlPlane), exists(labelMaster)}},
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100, Preference: corev1.NodeSelectorTerm{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: labelWorker, Operator: corev1.NodeSelectorOpDoesNotExist}},
			}}},
		}},
		Tolerations: []corev1.Toleration{
			{Key: labelControlPlane, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
			{Key: labelMaster, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		},
	}
}

// InjectPlacement merges a component's placement (cc, or the default one when it
// has no nodePlacement) into spec: node selectors the pod already has win, affinity
// terms and tolerations are added to the pod's own, and kubernetes.io/os=linux is
// selected unless the placement names another OS.
func InjectPlacement(spec *corev1.PodSpec, cc *v1.ComponentConfig, d DefaultPlacement) {
	p := defaultNodePlacement(d)
	if cc != nil && cc.NodePlacement != nil {
		p = cc.NodePlacement.DeepCopy()
	}
	selector := map[string]string{corev1.LabelOSStable: "linux"}
	for k, v := range p.NodeSelector {
		selector[k] = v
	}
	if spec.NodeSelector == nil {
		spec.NodeSelector = map[string]string{}
	}
	for k, v := range selector {
		if _, set := spec.NodeSelector[k]; !set {
			spec.NodeSelector[k] = v
		}
	}
	mergeAffinity(spec, p.Affinity)
	for _, t := range p.Tolerations {
		spec.Tolerations = append(spec.Tolerations, *t.DeepCopy())
	}
}

// mergeAffinity adds the terms of a to the pod's affinity.
func mergeAffinity(spec *corev1.PodSpec, a *corev1.Affinity) {
	if a == nil {
		return
	}
	if spec.Affinity == nil {
		spec.Affinity = a.DeepCopy()
		return
	}
	if na := a.NodeAffinity; na != nil {
		if spec.Affinity.NodeAffinity == nil {
			spec.Affinity.NodeAffinity = na.DeepCopy()
		} else {
			own := spec.Affinity.NodeAffinity
			if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
				if own.RequiredDuringSchedulingIgnoredDuringExecution == nil {
					own.RequiredDuringSchedulingIgnoredDuringExecution = req.DeepCopy()
				} else {
					own.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = append(
						own.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms, req.DeepCopy().NodeSelectorTerms...)
				}
			}
			own.PreferredDuringSchedulingIgnoredDuringExecution = append(own.PreferredDuringSchedulingIgnoredDuringExecution,
				na.DeepCopy().PreferredDuringSchedulingIgnoredDuringExecution...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		if spec.Affinity.PodAffinity == nil {
			spec.Affinity.PodAffinity = &corev1.PodAffinity{}
		}
		own := spec.Affinity.PodAffinity
		own.RequiredDuringSchedulingIgnoredDuringExecution = append(own.RequiredDuringSchedulingIgnoredDuringExecution, pa.DeepCopy().RequiredDuringSchedulingIgnoredDuringExecution...)
		own.PreferredDuringSchedulingIgnoredDuringExecution = append(own.PreferredDuringSchedulingIgnoredDuringExecution, pa.DeepCopy().PreferredDuringSchedulingIgnoredDuringExecution...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		if spec.Affinity.PodAntiAffinity == nil {
			spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		own := spec.Affinity.PodAntiAffinity
		own.RequiredDuringSchedulingIgnoredDuringExecution = append(own.RequiredDuringSchedulingIgnoredDuringExecution, pa.DeepCopy().RequiredDuringSchedulingIgnoredDuringExecution...)
		own.PreferredDuringSchedulingIgnoredDuringExecution = append(own.PreferredDuringSchedulingIgnoredDuringExecution, pa.DeepCopy().PreferredDuringSchedulingIgnoredDuringExecution...)
	}
}

// setFlags replaces the command of the main container of virt-api,
// virt-controller or virt-handler with FlagCommand, when flags are given for it.
func setFlags(obj client.Object, flags *v1.Flags) error {
	if flags == nil {
		return nil
	}
	var tmpl *corev1.PodTemplateSpec
	var given map[string]string
	var field string
	switch o := obj.(type) {
	case *appsv1.Deployment:
		tmpl = &o.Spec.Template
		switch o.Name {
		case VirtAPI:
			given, field = flags.API, "api"
		case VirtController:
			given, field = flags.Controller, "controller"
		}
	case *appsv1.DaemonSet:
		if o.Name == VirtHandler {
			tmpl, given, field = &o.Spec.Template, flags.Handler, "handler"
		}
	}
	if len(given) == 0 {
		return nil
	}
	for i := range tmpl.Spec.Containers {
		if c := &tmpl.Spec.Containers[i]; c.Name == obj.GetName() {
			c.Command = FlagCommand(obj.GetName(), given)
			return nil
		}
	}
	return &PatchError{Source: "customizeComponents.flags." + field, Object: RefOf(obj),
		Err: fmt.Errorf("no container named %s", obj.GetName())}
}

// FlagCommand is the command a component runs with flags (§4.5): the binary
// name, then each flag with its name lower-cased, sorted by name. An empty value
// is a bare "--name"; true and false (any case) become "--name=true|false"; any
// other value is a separate argument after "--name", kept as written (upstream
// also lower-cases it, which breaks paths and URLs).
func FlagCommand(binary string, flags map[string]string) []string {
	names := make([]string, 0, len(flags))
	for n := range flags {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		li, lj := strings.ToLower(names[i]), strings.ToLower(names[j])
		if li != lj {
			return li < lj
		}
		return names[i] < names[j]
	})
	cmd := []string{binary}
	for _, n := range names {
		flag, v := "--"+strings.ToLower(n), flags[n]
		switch lv := strings.ToLower(v); {
		case v == "":
			cmd = append(cmd, flag)
		case lv == "true" || lv == "false":
			cmd = append(cmd, flag+"="+lv)
		default:
			cmd = append(cmd, flag, v)
		}
	}
	return cmd
}
