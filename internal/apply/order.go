package apply

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// Path is the component bring-up order (§4.2).
type Path int

const (
	// Install (also a rollback or a config-only change): "validation first",
	// virt-api, then the controllers, then virt-handler.
	Install Path = iota
	// Upgrade: "new nodes first, API last", virt-handler, the controllers, virt-api.
	Upgrade
)

func (p Path) String() string {
	if p == Upgrade {
		return "Upgrade"
	}
	return "Install"
}

// ChoosePath: Install when nothing is observed yet, or when both versions are
// semantic versions (leading "v" optional) and target ≤ observed; Upgrade
// otherwise, including whenever either is not a semantic version (devel, latest).
func ChoosePath(targetVersion, observedVersion string) Path {
	if observedVersion == "" {
		return Install
	}
	t, err1 := version.ParseSemantic(strings.TrimPrefix(targetVersion, "v"))
	o, err2 := version.ParseSemantic(strings.TrimPrefix(observedVersion, "v"))
	if err1 == nil && err2 == nil && !o.LessThan(t) {
		return Install
	}
	return Upgrade
}

// Step names.
const (
	StepPrerequisites = "prerequisites"
	StepVirtAPI       = "virt-api"
	StepControllers   = "controllers"
	StepVirtHandler   = "virt-handler"
	// StepExtras holds the kinds without a typed list (the cluster instancetypes
	// and preferences, anything a release's own dump adds): written once every
	// component is up, as upstream writes its instancetypes after rollover, since
	// their CRDs and virt-api's admission webhooks must serve them first.
	StepExtras = "extras"
)

// Step is a group of objects written together; the next step starts only when
// this one has RolledOver.
type Step struct {
	Name    string
	Objects []client.Object
}

// Steps orders the (desired) strategy for path. Every object appears in exactly
// one step; empty steps are left out. The prerequisites come first on both
// paths: CRDs, RBAC (ServiceAccounts, ClusterRoles, ClusterRoleBindings, Roles,
// RoleBindings), SCCs, Services, CA Secrets, ConfigMaps (the CA bundles),
// admission policies and webhooks, APIServices, the other certificate Secrets,
// Routes and monitoring. Then
// the workloads by path; a Deployment's PodDisruptionBudget follows it. The
// controllers step holds virt-controller, virt-exportproxy,
// virt-synchronization-controller and any other Deployment except virt-api (the
// virt-template ones). StepExtras comes last on both paths.
func Steps(s *strategy.Strategy, path Path) []Step {
	var pre []client.Object
	pre = appendObjs(pre, s.CRDs)
	pre = appendObjs(pre, s.ServiceAccounts)
	pre = appendObjs(pre, s.ClusterRoles)
	pre = appendObjs(pre, s.ClusterRoleBindings)
	pre = appendObjs(pre, s.Roles)
	pre = appendObjs(pre, s.RoleBindings)
	pre = appendObjs(pre, s.SecurityContextConstraints)
	pre = appendObjs(pre, s.Services)
	// Certificates in trust order, so a CA rotation never has a leaf signed by a
	// CA that its clients do not trust yet: CAs, then the bundles and the
	// webhooks and APIServices that carry them, then the leaves.
	caSecrets, leafSecrets := splitCASecrets(s.Secrets)
	pre = appendObjs(pre, caSecrets)
	pre = appendObjs(pre, s.ConfigMaps)
	pre = appendObjs(pre, s.ValidatingAdmissionPolicies)
	pre = appendObjs(pre, s.ValidatingAdmissionPolicyBindings)
	pre = appendObjs(pre, s.ValidatingWebhookConfigurations)
	pre = appendObjs(pre, s.MutatingWebhookConfigurations)
	pre = appendObjs(pre, s.APIServices)
	pre = appendObjs(pre, leafSecrets)
	pre = appendObjs(pre, s.Routes)
	pre = appendObjs(pre, s.ServiceMonitors)
	pre = appendObjs(pre, s.PrometheusRules)

	var api, controllers []client.Object
	for _, name := range []string{VirtController, VirtExportProxy, VirtSynchronizationController} {
		for _, d := range s.Deployments {
			if d.Name == name {
				controllers = withPDB(controllers, d)
			}
		}
	}
	for _, d := range s.Deployments {
		switch d.Name {
		case VirtAPI:
			api = withPDB(api, d)
		case VirtController, VirtExportProxy, VirtSynchronizationController:
		default:
			controllers = withPDB(controllers, d)
		}
	}
	handler := appendObjs(nil, s.DaemonSets)

	steps := []Step{{StepPrerequisites, pre}}
	if path == Upgrade {
		steps = append(steps, Step{StepVirtHandler, handler}, Step{StepControllers, controllers}, Step{StepVirtAPI, api})
	} else {
		steps = append(steps, Step{StepVirtAPI, api}, Step{StepControllers, controllers}, Step{StepVirtHandler, handler})
	}
	steps = append(steps, Step{StepExtras, appendObjs(nil, s.Others)})
	out := steps[:0]
	for _, st := range steps {
		if len(st.Objects) > 0 {
			out = append(out, st)
		}
	}
	return out
}

// splitCASecrets separates the CA Secrets from the others, keeping their order.
func splitCASecrets(secrets []*corev1.Secret) (cas, leaves []*corev1.Secret) {
	for _, sec := range secrets {
		if certs.IsCAName(sec.Name) {
			cas = append(cas, sec)
		} else {
			leaves = append(leaves, sec)
		}
	}
	return cas, leaves
}

func appendObjs[T client.Object](out []client.Object, objs []T) []client.Object {
	for _, o := range objs {
		out = append(out, o)
	}
	return out
}

func withPDB(out []client.Object, d *appsv1.Deployment) []client.Object {
	out = append(out, d)
	for _, pdb := range PodDisruptionBudgets([]*appsv1.Deployment{d}) {
		out = append(out, pdb)
	}
	return out
}

// Workloads are the Deployments and DaemonSets of the step.
func (s Step) Workloads() (deployments []*appsv1.Deployment, daemonSets []*appsv1.DaemonSet) {
	for _, o := range s.Objects {
		switch w := o.(type) {
		case *appsv1.Deployment:
			deployments = append(deployments, w)
		case *appsv1.DaemonSet:
			daemonSets = append(daemonSets, w)
		}
	}
	return deployments, daemonSets
}
