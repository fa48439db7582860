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
	schedulingv1 "k8s.io/api/scheduling/v1"
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

// LiveObjects GETs every object of the (desired) strategy and the
// PodDisruptionBudgets of its Deployments. Absent objects are absent from the
// map. The reader's scheme must know every typed kind of the strategy.
func LiveObjects(ctx context.Context, r client.Reader, s *strategy.Strategy) (map[ObjectRef]client.Object, error) {
	objs := s.Objects()
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
	{func() client.ObjectList { return &schedulingv1.PriorityClassList{} }, false},
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
// legacy value) of each kind a strategy can hold, plus PodDisruptionBudgets.
// Namespaced kinds are listed in namespace ("" for all namespaces: monitoring
// objects live in the monitoring namespace). Kinds whose API the cluster does
// not serve (SCC and Route off OpenShift, monitoring without prometheus-operator)
// are skipped. The result feeds Orphans and UninstallOrder.
func ListManaged(ctx context.Context, r client.Reader, namespace string) ([]client.Object, error) {
	req, err := labels.NewRequirement(metadata.ManagedByLabel, selection.In,
		[]string{metadata.ManagedByValue, metadata.LegacyManagedByValue})
	if err != nil {
		return nil, err
	}
	selector := client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*req)}
	var out []client.Object
	for _, ml := range managedLists {
		list := ml.list()
		opts := []client.ListOption{selector}
		if ml.namespaced && namespace != "" {
			opts = append(opts, client.InNamespace(namespace))
		}
		if err := r.List(ctx, list, opts...); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, fmt.Errorf("listing managed %T: %w", list, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			if o, ok := it.(client.Object); ok {
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// ServedOnly returns s (shallow) without the optional kinds whose API the
// cluster does not serve: SCCs and Routes (OpenShift only), ServiceMonitors and
// PrometheusRules (prometheus-operator), admission policies (older clusters).
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
		_, err := mapper.RESTMapping(k.gvk.GroupKind(), k.gvk.Version)
		switch {
		case meta.IsNoMatchError(err):
			k.drop()
		case err != nil:
			return nil, fmt.Errorf("is %s served: %w", k.gvk.Kind, err)
		}
	}
	return &out, nil
}
