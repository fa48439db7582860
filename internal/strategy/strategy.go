// Package strategy owns the install strategy: the complete, typed set of
// objects one deployment ID installs, and its storage in a ConfigMap.
//
// A Strategy is plain data. internal/strategy/generate builds one from a
// deployment config; this package encodes it into (and decodes it from) the
// install-strategy ConfigMap format upstream KubeVirt uses, so a strategy
// is generated once per deployment ID and then loaded from the cache.
package strategy

import (
	"fmt"
	"sort"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Strategy is every object one deployment ID installs, grouped by kind.
// OpenShift-only kinds (SecurityContextConstraints, Route) are unstructured so
// the operator needs no OpenShift API module; every other kind without a typed
// list (the cluster instancetypes and preferences, or whatever a release's own
// dump holds that this operator has no types for) is kept in Others, in the order
// the strategy lists it, and applied after every component is up (apply.Steps).
type Strategy struct {
	ServiceAccounts                   []*corev1.ServiceAccount
	ClusterRoles                      []*rbacv1.ClusterRole
	ClusterRoleBindings               []*rbacv1.ClusterRoleBinding
	Roles                             []*rbacv1.Role
	RoleBindings                      []*rbacv1.RoleBinding
	CRDs                              []*apiextensionsv1.CustomResourceDefinition
	Services                          []*corev1.Service
	Secrets                           []*corev1.Secret
	ValidatingWebhookConfigurations   []*admissionregistrationv1.ValidatingWebhookConfiguration
	MutatingWebhookConfigurations     []*admissionregistrationv1.MutatingWebhookConfiguration
	ValidatingAdmissionPolicyBindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	ValidatingAdmissionPolicies       []*admissionregistrationv1.ValidatingAdmissionPolicy
	APIServices                       []*apiregistrationv1.APIService
	Deployments                       []*appsv1.Deployment
	DaemonSets                        []*appsv1.DaemonSet
	SecurityContextConstraints        []*unstructured.Unstructured
	ServiceMonitors                   []*monitoringv1.ServiceMonitor
	PrometheusRules                   []*monitoringv1.PrometheusRule
	ConfigMaps                        []*corev1.ConfigMap
	Routes                            []*unstructured.Unstructured
	Others                            []*unstructured.Unstructured
}

// Kinds of the unstructured OpenShift objects a strategy may hold.
const (
	KindSecurityContextConstraints = "SecurityContextConstraints"
	KindRoute                      = "Route"
)

// listKinds are the kinds a Strategy has a list for, with their apiVersion.
var listKinds = func() map[string]schema.GroupVersionKind {
	out := map[string]schema.GroupVersionKind{
		KindSecurityContextConstraints: {Group: "security.openshift.io", Version: "v1", Kind: KindSecurityContextConstraints},
		KindRoute:                      {Group: "route.openshift.io", Version: "v1", Kind: KindRoute},
	}
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{}, &rbacv1.ClusterRole{}, &rbacv1.ClusterRoleBinding{}, &rbacv1.Role{},
		&rbacv1.RoleBinding{}, &apiextensionsv1.CustomResourceDefinition{}, &corev1.Service{}, &corev1.Secret{},
		&admissionregistrationv1.ValidatingWebhookConfiguration{}, &admissionregistrationv1.MutatingWebhookConfiguration{},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, &admissionregistrationv1.ValidatingAdmissionPolicy{},
		&apiregistrationv1.APIService{}, &appsv1.Deployment{}, &appsv1.DaemonSet{}, &monitoringv1.ServiceMonitor{},
		&monitoringv1.PrometheusRule{}, &corev1.ConfigMap{},
	} {
		gvk, err := kindOf(obj)
		if err != nil {
			panic(err) // every kind above is registered in the scheme
		}
		out[gvk.Kind] = gvk
	}
	return out
}()

// Add appends obj to the list of its kind; an unstructured object of a kind
// without a list goes to Others. A typed object of another kind is an error (a
// programming error: decoding never produces one).
func (s *Strategy) Add(obj client.Object) error {
	switch o := obj.(type) {
	case *corev1.ServiceAccount:
		s.ServiceAccounts = append(s.ServiceAccounts, o)
	case *rbacv1.ClusterRole:
		s.ClusterRoles = append(s.ClusterRoles, o)
	case *rbacv1.ClusterRoleBinding:
		s.ClusterRoleBindings = append(s.ClusterRoleBindings, o)
	case *rbacv1.Role:
		s.Roles = append(s.Roles, o)
	case *rbacv1.RoleBinding:
		s.RoleBindings = append(s.RoleBindings, o)
	case *apiextensionsv1.CustomResourceDefinition:
		s.CRDs = append(s.CRDs, o)
	case *corev1.Service:
		s.Services = append(s.Services, o)
	case *corev1.Secret:
		s.Secrets = append(s.Secrets, o)
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		s.ValidatingWebhookConfigurations = append(s.ValidatingWebhookConfigurations, o)
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		s.MutatingWebhookConfigurations = append(s.MutatingWebhookConfigurations, o)
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		s.ValidatingAdmissionPolicyBindings = append(s.ValidatingAdmissionPolicyBindings, o)
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		s.ValidatingAdmissionPolicies = append(s.ValidatingAdmissionPolicies, o)
	case *apiregistrationv1.APIService:
		s.APIServices = append(s.APIServices, o)
	case *appsv1.Deployment:
		s.Deployments = append(s.Deployments, o)
	case *appsv1.DaemonSet:
		s.DaemonSets = append(s.DaemonSets, o)
	case *monitoringv1.ServiceMonitor:
		s.ServiceMonitors = append(s.ServiceMonitors, o)
	case *monitoringv1.PrometheusRule:
		s.PrometheusRules = append(s.PrometheusRules, o)
	case *corev1.ConfigMap:
		s.ConfigMaps = append(s.ConfigMaps, o)
	case *unstructured.Unstructured:
		switch o.GetKind() {
		case KindSecurityContextConstraints:
			s.SecurityContextConstraints = append(s.SecurityContextConstraints, o)
		case KindRoute:
			s.Routes = append(s.Routes, o)
		default:
			s.Others = append(s.Others, o)
		}
	default:
		// A typed object of a kind without a list (decoding gives one for any kind
		// the scheme knows, a Pod say) is kept like any other foreign kind.
		u, err := toUnstructured(obj)
		if err != nil {
			return err
		}
		s.Others = append(s.Others, u)
	}
	return nil
}

// Objects returns every object in emission order: the order upstream writes
// them into the ConfigMap (§3.3 of the upstream notes), which is also a safe
// creation order (identities and RBAC before the workloads that use them).
func (s *Strategy) Objects() []client.Object {
	var out []client.Object
	out = appendAll(out, s.ServiceAccounts)
	out = appendAll(out, s.ClusterRoles)
	out = appendAll(out, s.ClusterRoleBindings)
	out = appendAll(out, s.Roles)
	out = appendAll(out, s.RoleBindings)
	out = appendAll(out, s.CRDs)
	out = appendAll(out, s.Services)
	out = appendAll(out, s.Secrets)
	out = appendAll(out, s.ValidatingWebhookConfigurations)
	out = appendAll(out, s.MutatingWebhookConfigurations)
	out = appendAll(out, s.ValidatingAdmissionPolicyBindings)
	out = appendAll(out, s.ValidatingAdmissionPolicies)
	out = appendAll(out, s.APIServices)
	out = appendAll(out, s.Deployments)
	out = appendAll(out, s.DaemonSets)
	out = appendAll(out, s.SecurityContextConstraints)
	out = appendAll(out, s.ServiceMonitors)
	out = appendAll(out, s.PrometheusRules)
	out = appendAll(out, s.ConfigMaps)
	out = appendAll(out, s.Routes)
	out = appendAll(out, s.Others)
	return out
}

func appendAll[T client.Object](out []client.Object, objs []T) []client.Object {
	for _, o := range objs {
		out = append(out, o)
	}
	return out
}

// ObjectRef names one object of a strategy for listings and diffs.
type ObjectRef struct {
	Kind      string
	Namespace string
	Name      string
}

// String renders "Kind namespace/name", or "Kind name" for a cluster-scoped object.
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// Inventory lists every object's reference, sorted, without duplicates.
// Kinds come from each object's TypeMeta, which the generator and the decoder
// always set.
func (s *Strategy) Inventory() []ObjectRef {
	seen := map[ObjectRef]bool{}
	var refs []ObjectRef
	for _, o := range s.Objects() {
		ref := ObjectRef{Kind: o.GetObjectKind().GroupVersionKind().Kind, Namespace: o.GetNamespace(), Name: o.GetName()}
		if !seen[ref] {
			seen[ref] = true
			refs = append(refs, ref)
		}
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
	return refs
}

// toUnstructured converts a typed object to unstructured, with its apiVersion and kind.
func toUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	gvk, err := kindOf(obj)
	if err != nil {
		return nil, err
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	return u, nil
}
