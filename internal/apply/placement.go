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

// infraDeployments receive spec.infra placement and replicas.
var infraDeployments = map[string]bool{
	VirtAPI: true, VirtController: true, VirtExportProxy: true, VirtSynchronizationController: true,
}

// place applies spec.infra to the infra Deployments and spec.workloads to the
// virt-handler DaemonSet: nodeSelector entries are merged in (the placement wins
// on a shared key), affinity is replaced, tolerations are appended.
func place(obj client.Object, infra, workloads *v1.ComponentConfig) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		if infra == nil || !infraDeployments[o.Name] {
			return
		}
		placePod(&o.Spec.Template.Spec, infra.NodePlacement)
		if infra.Replicas != nil {
			r := int32(*infra.Replicas)
			o.Spec.Replicas = &r
		}
	case *appsv1.DaemonSet:
		if workloads != nil && o.Name == VirtHandler {
			placePod(&o.Spec.Template.Spec, workloads.NodePlacement)
		}
	}
}

func placePod(spec *corev1.PodSpec, p *v1.NodePlacement) {
	if p == nil {
		return
	}
	if len(p.NodeSelector) > 0 {
		if spec.NodeSelector == nil {
			spec.NodeSelector = map[string]string{}
		}
		for k, v := range p.NodeSelector {
			spec.NodeSelector[k] = v
		}
	}
	if p.Affinity != nil {
		spec.Affinity = p.Affinity.DeepCopy()
	}
	for _, t := range p.Tolerations {
		spec.Tolerations = append(spec.Tolerations, *t.DeepCopy())
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

// APIReplicas is virt-api's replica count when spec.infra.replicas is unset
// (§4.8): 1 on a single schedulable node, else max(2, nodes/10). The caller
// applies it, since it depends on the cluster, not on the strategy.
func APIReplicas(schedulableNodes int) int32 {
	if schedulableNodes == 1 {
		return 1
	}
	return int32(max(2, schedulableNodes/10))
}
