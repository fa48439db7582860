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
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
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
	list       func() client.ObjectList
	namespaced bool
}

var managedLists = []managedList{
	{func() client.ObjectList { return &corev1.ServiceAccountList{} }, true},
	{func() client.ObjectList { return &rbacv1.ClusterRoleList{} }, false},
	{func() client.ObjectList { return &rbacv1.ClusterRoleBindingList{} }, false},
	{func() client.ObjectList { return &rbacv1.RoleList{} }, true},
	{func() client.ObjectList { return &rbacv1.RoleBindingList{} }, true},
	{func() client.ObjectList { return &apiextensionsv1.CustomResourceDefinitionList{} }, false},
	{func() client.ObjectList { return &corev1.ServiceList{} }, true},
	{func() client.ObjectList { return &corev1.SecretList{} }, true},
	{func() client.ObjectList { return &corev1.ConfigMapList{} }, true},
	{func() client.ObjectList { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} }, false},
	{func() client.ObjectList { return &admissionregistrationv1.MutatingWebhookConfigurationList{} }, false},
	{func() client.ObjectList { return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{} }, false},
	{func() client.ObjectList { return &admissionregistrationv1.ValidatingAdmissionPolicyList{} }, false},
	{func() client.ObjectList { return &apiregistrationv1.APIServiceList{} }, false},
	{func() client.ObjectList { return &appsv1.DeploymentList{} }, true},
	{func() client.ObjectList { return &appsv1.DaemonSetList{} }, true},
	{func() client.ObjectList { return &policyv1.PodDisruptionBudgetList{} }, true},
	{func() client.ObjectList { return &monitoringv1.ServiceMonitorList{} }, true},
	{func() client.ObjectList { return &monitoringv1.PrometheusRuleList{} }, true},
	{func() client.ObjectList { return unstructuredList(sccGVK) }, false},
	{func() client.ObjectList { return unstructuredList(routeGVK) }, true},
}

func unstructuredList(gvk schema.GroupVersionKind) client.ObjectList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l
}

// ListManaged lists every object carrying the managed-by label (current or
// legacy value) of each kind a strategy can hold, plus PodDisruptionBudgets and
// the extra kinds given (a strategy's Others). Namespaced kinds are listed in
// each of namespaces (nil for all namespaces; a strategy also writes to the
// monitoring namespace). Kinds whose API the cluster does not serve (SCC and Route off
// OpenShift, monitoring without prometheus-operator) are skipped. The result
// feeds Orphans and UninstallOrder.
func ListManaged(ctx context.Context, r client.Reader, namespaces []string, extra ...schema.GroupVersionKind) ([]client.Object, error) {
	var out []client.Object
	for _, ml := range managedLists {
		scopes := []string{""}
		if ml.namespaced && namespaces != nil {
			scopes = namespaces
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

// listManaged lists the operator's objects of one kind (in namespace, or
// everywhere for ""); a kind the cluster does not serve lists nothing.
func listManaged(ctx context.Context, r client.Reader, list client.ObjectList, namespace string) ([]client.Object, error) {
	req, err := labels.NewRequirement(metadata.ManagedByLabel, selection.In,
		[]string{metadata.ManagedByValue, metadata.LegacyManagedByValue})
	if err != nil {
		return nil, err
	}
	opts := []client.ListOption{client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*req)}}
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
