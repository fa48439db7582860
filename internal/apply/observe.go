package apply

import (
	"context"
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// LiveObjects GETs every object of the (desired) strategy but Others, and the
// PodDisruptionBudgets of its Deployments. Absent objects are absent from the
// map. The reader's scheme must know every typed kind of the strategy.
func LiveObjects(ctx context.Context, r client.Reader, s *strategy.Strategy) (map[ObjectRef]client.Object, error) {
	objs := s.Objects()
	objs = objs[:len(objs)-len(s.Others)] // Others come last; LiveOthers reads them
	for _, pdb := range PodDisruptionBudgets(s.Deployments) {
		objs = append(objs, pdb)
	}
	out := make(map[ObjectRef]client.Object, len(objs))
	for _, o := range objs {
		live := newLike(o)
		err := r.Get(ctx, client.ObjectKeyFromObject(o), live)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading %s: %w", RefOf(o), err)
		default:
			out[RefOf(o)] = live
		}
	}
	return out, nil
}

// LiveOthers reads the live copies of objs (a strategy's Others) with one List of
// the operator's objects per kind instead of a GET each: a release ships over a
// hundred cluster instancetypes and preferences, and these kinds are not cached.
// Kinds the cluster does not serve are treated as absent.
func LiveOthers(ctx context.Context, r client.Reader, objs []*unstructured.Unstructured) (map[ObjectRef]client.Object, error) {
	out := map[ObjectRef]client.Object{}
	listed := map[schema.GroupVersionKind]bool{}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if listed[gvk] {
			continue
		}
		listed[gvk] = true
		items, err := listManaged(ctx, r, unstructuredList(gvk), "")
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			out[RefOf(it)] = it
		}
	}
	return out, nil
}

var (
	sccGVK   = schema.GroupVersionKind{Group: "security.openshift.io", Version: "v1", Kind: strategy.KindSecurityContextConstraints}
	routeGVK = schema.GroupVersionKind{Group: "route.openshift.io", Version: "v1", Kind: strategy.KindRoute}
)

// managedList is one kind ListManaged lists.
type managedList struct {
	kind       schema.GroupKind
	list       func() client.ObjectList
	namespaced bool
	// elsewhere: a strategy may put this kind in a namespace other than the
	// operator's (the monitoring namespace, kube-system).
	elsewhere bool
}

func gk(group, kind string) schema.GroupKind { return schema.GroupKind{Group: group, Kind: kind} }

const (
	rbacGroup      = "rbac.authorization.k8s.io"
	admissionGroup = "admissionregistration.k8s.io"
	monitoringGrp  = "monitoring.coreos.com"
)

var managedLists = []managedList{
	{gk("", "ServiceAccount"), func() client.ObjectList { return &corev1.ServiceAccountList{} }, true, false},
	{gk(rbacGroup, "ClusterRole"), func() client.ObjectList { return &rbacv1.ClusterRoleList{} }, false, false},
	{gk(rbacGroup, "ClusterRoleBinding"), func() client.ObjectList { return &rbacv1.ClusterRoleBindingList{} }, false, false},
	{gk(rbacGroup, "Role"), func() client.ObjectList { return &rbacv1.RoleList{} }, true, true},
	{gk(rbacGroup, "RoleBinding"), func() client.ObjectList { return &rbacv1.RoleBindingList{} }, true, true},
	{gk("apiextensions.k8s.io", "CustomResourceDefinition"), func() client.ObjectList { return &apiextensionsv1.CustomResourceDefinitionList{} }, false, false},
	{gk("", "Service"), func() client.ObjectList { return &corev1.ServiceList{} }, true, false},
	{gk("", "Secret"), func() client.ObjectList { return &corev1.SecretList{} }, true, false},
	{gk("", "ConfigMap"), func() client.ObjectList { return &corev1.ConfigMapList{} }, true, false},
	{gk(admissionGroup, "ValidatingWebhookConfiguration"), func() client.ObjectList { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} }, false, false},
	{gk(admissionGroup, "MutatingWebhookConfiguration"), func() client.ObjectList { return &admissionregistrationv1.MutatingWebhookConfigurationList{} }, false, false},
	{gk(admissionGroup, "ValidatingAdmissionPolicyBinding"), func() client.ObjectList { return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{} }, false, false},
	{gk(admissionGroup, "ValidatingAdmissionPolicy"), func() client.ObjectList { return &admissionregistrationv1.ValidatingAdmissionPolicyList{} }, false, false},
	{gk("apiregistration.k8s.io", "APIService"), func() client.ObjectList { return &apiregistrationv1.APIServiceList{} }, false, false},
	{gk("apps", "Deployment"), func() client.ObjectList { return &appsv1.DeploymentList{} }, true, false},
	{gk("apps", "DaemonSet"), func() client.ObjectList { return &appsv1.DaemonSetList{} }, true, false},
	{gk("policy", "PodDisruptionBudget"), func() client.ObjectList { return &policyv1.PodDisruptionBudgetList{} }, true, false},
	{gk(monitoringGrp, "ServiceMonitor"), func() client.ObjectList { return &monitoringv1.ServiceMonitorList{} }, true, true},
	{gk(monitoringGrp, "PrometheusRule"), func() client.ObjectList { return &monitoringv1.PrometheusRuleList{} }, true, true},
	{sccGVK.GroupKind(), func() client.ObjectList { return unstructuredList(sccGVK) }, false, false},
	{routeGVK.GroupKind(), func() client.ObjectList { return unstructuredList(routeGVK) }, true, false},
}

func unstructuredList(gvk schema.GroupVersionKind) client.ObjectList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l
}

// Scope is where ListManaged looks for namespaced kinds: every kind in the
// operator's Namespace ("" is every namespace), and in Others (where a strategy
// also writes: the monitoring namespace, kube-system) only the kinds a strategy
// puts there.
type Scope struct {
	Namespace string
	Others    []string
	// Kinds, when set, limits the lists to these kinds (by name, unique among a
	// strategy's kinds: StrategyKinds); nil lists every kind a strategy can hold.
	Kinds map[string]bool
}

// Split divides scope by kind: the part listing only kind, and the part
// listing every other kind it would list.
func (s Scope) Split(kind string) (only, rest Scope) {
	only, rest = s, s
	only.Kinds = map[string]bool{kind: s.Kinds == nil || s.Kinds[kind]}
	rest.Kinds = map[string]bool{}
	for _, ml := range managedLists {
		if k := ml.kind.Kind; k != kind && (s.Kinds == nil || s.Kinds[k]) {
			rest.Kinds[k] = true
		}
	}
	return only, rest
}

// ListManaged lists every object carrying the managed-by label (current or
// legacy value) of each kind a strategy can hold, plus PodDisruptionBudgets and
// the extra kinds given (a strategy's Others, cluster-scoped), within scope.
// Kinds whose API the cluster does not serve (SCC and Route off OpenShift,
// monitoring without prometheus-operator) are skipped. The result feeds Orphans
// and UninstallOrder.
func ListManaged(ctx context.Context, r client.Reader, scope Scope, extra ...schema.GroupVersionKind) ([]client.Object, error) {
	var out []client.Object
	for _, ml := range managedLists {
		if scope.Kinds != nil && !scope.Kinds[ml.kind.Kind] {
			continue
		}
		scopes := []string{""}
		if ml.namespaced {
			scopes = []string{scope.Namespace}
			if ml.elsewhere {
				scopes = append(scopes, scope.Others...)
			}
		}
		for _, ns := range scopes {
			items, err := listManaged(ctx, r, ml.list(), ns)
			if err != nil {
				return nil, err
			}
			out = append(out, items...)
		}
	}
	for _, gvk := range extra {
		items, err := listManaged(ctx, r, unstructuredList(gvk), "")
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
	}
	return out, nil
}

// StrategyKinds are the kinds of the strategies' objects, and
// PodDisruptionBudget with Deployments (each has one): what an uninstall of
// them looks for.
func StrategyKinds(strategies ...*strategy.Strategy) map[string]bool {
	out := map[string]bool{}
	for _, s := range strategies {
		for _, o := range s.Objects() {
			out[RefOf(o).Kind] = true
		}
		if len(s.Deployments) > 0 {
			out["PodDisruptionBudget"] = true
		}
	}
	return out
}

// listManaged lists the operator's objects of one kind (in namespace, or
// everywhere for ""); a kind the cluster does not serve lists nothing.
func listManaged(ctx context.Context, r client.Reader, list client.ObjectList, namespace string) ([]client.Object, error) {
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: metadata.ManagedSelector()}}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := r.List(ctx, list, opts...); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing managed %T: %w", list, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(items))
	for _, it := range items {
		if o, ok := it.(client.Object); ok {
			out = append(out, o)
		}
	}
	return out, nil
}

// KindsOf lists the distinct kinds of objs, in order.
func KindsOf(objs []*unstructured.Unstructured) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	seen := map[schema.GroupVersionKind]bool{}
	for _, o := range objs {
		if gvk := o.GroupVersionKind(); !seen[gvk] {
			seen[gvk] = true
			out = append(out, gvk)
		}
	}
	return out
}

// ServedOnly returns s (shallow) without the optional kinds whose API the
// cluster does not serve: SCCs and Routes (OpenShift only), ServiceMonitors and
// PrometheusRules (prometheus-operator), admission policies (older clusters),
// and any of Others whose kind is not served yet (their CRDs are the strategy's
// own: on a first install they are served from the pass after the CRDs went in).
// Run it before LiveObjects, Plan and Steps so none of them sees such a kind.
func ServedOnly(s *strategy.Strategy, mapper meta.RESTMapper) (*strategy.Strategy, error) {
	out := *s
	optional := []struct {
		gvk  schema.GroupVersionKind
		n    int
		drop func()
	}{
		{sccGVK, len(s.SecurityContextConstraints), func() { out.SecurityContextConstraints = nil }},
		{routeGVK, len(s.Routes), func() { out.Routes = nil }},
		{monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.ServiceMonitorsKind), len(s.ServiceMonitors), func() { out.ServiceMonitors = nil }},
		{monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.PrometheusRuleKind), len(s.PrometheusRules), func() { out.PrometheusRules = nil }},
		{admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy"), len(s.ValidatingAdmissionPolicies), func() { out.ValidatingAdmissionPolicies = nil }},
		{admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding"), len(s.ValidatingAdmissionPolicyBindings), func() { out.ValidatingAdmissionPolicyBindings = nil }},
	}
	for _, k := range optional {
		if k.n == 0 {
			continue
		}
		served, err := isServed(mapper, k.gvk)
		if err != nil {
			return nil, err
		}
		if !served {
			k.drop()
		}
	}
	out.Others = nil
	servedKinds := map[schema.GroupVersionKind]bool{}
	for _, gvk := range KindsOf(s.Others) {
		served, err := isServed(mapper, gvk)
		if err != nil {
			return nil, err
		}
		servedKinds[gvk] = served
	}
	for _, o := range s.Others {
		if servedKinds[o.GroupVersionKind()] {
			out.Others = append(out.Others, o)
		}
	}
	return &out, nil
}

func isServed(mapper meta.RESTMapper, gvk schema.GroupVersionKind) (bool, error) {
	_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case meta.IsNoMatchError(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("is %s served: %w", gvk.Kind, err)
	}
	return true, nil
}
