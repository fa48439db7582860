// Package render_test checks on a sandbox cluster that the API server accepts
// every object of a generated install strategy, and that the node-restriction
// policy does what it says.
package render_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

const namespace = "kubevirt"

func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, apiregistrationv1.AddToScheme, monitoringv1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	cfg.QPS, cfg.Burst = 50, 100
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// standInCRD serves a kind the sandbox lacks (Prometheus operator, OpenShift)
// with an open schema, so the strategy's objects of that kind can be dry-run:
// their names, namespaces and metadata are checked, their spec is not.
func standInCRD(group, kind, plural string, cluster bool) *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	scope := apiextensionsv1.NamespaceScoped
	if cluster {
		scope = apiextensionsv1.ClusterScoped
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}},
			}},
		},
	}
}

// createOrUpdate writes obj for real (CRDs the sandbox already has are replaced).
func createOrUpdate(ctx context.Context, t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	err := c.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		existing := obj.DeepCopyObject().(client.Object)
		if err = c.Get(ctx, client.ObjectKeyFromObject(obj), existing); err == nil {
			obj.SetResourceVersion(existing.GetResourceVersion())
			err = c.Update(ctx, obj)
		}
	}
	if err != nil {
		t.Fatalf("writing %s %s: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
}

func waitEstablished(ctx context.Context, t *testing.T, c client.Client, names []string) {
	t.Helper()
	for _, name := range names {
		sandboxtest.Eventually(t, 60*time.Second, "CRD "+name+" Established", func() (bool, error) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, types.NamespacedName{Name: name}, crd); err != nil {
				return false, err
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
	}
}

// Every object of each release's strategy (with monitoring, the OpenShift objects and
// every gate-dependent object) is accepted by the API server: the CRDs for real, the
// rest, the cluster instancetypes and preferences under their real schemas included,
// by a server-side dry run.
func TestStrategyIsAcceptedByTheAPIServer(t *testing.T) {
	sb := sandboxtest.Start(t, 1)
	c := newClient(t, sb.RESTConfig())
	var s *strategy.Strategy
	for _, version := range []string{"v1.8.4", "v1.9.0"} {
		t.Run(version, func(t *testing.T) { s = testAccepted(t, c, version) })
	}
	t.Run("node restriction policy", func(t *testing.T) { testNodeRestriction(t.Context(), t, c, sb.RESTConfig(), s) })
}

func testAccepted(t *testing.T, c client.Client, version string) *strategy.Strategy {
	ctx := t.Context()
	manual := deployid.RoleAggregationManual
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: namespace}}
	kv.Spec.ImageTag = version
	kv.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	kv.Spec.Configuration.RoleAggregationStrategy = &manual
	kv.Spec.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{
		FeatureGates: []string{"Template", "Plugins", "PersistentReservation", "OptOutRoleAggregation"},
	}
	cfg, err := deployid.FromKubeVirt(kv, deployid.MapEnv{"VIRT_OPERATOR_IMAGE": "ghcr.io/virt-operator/virt-operator:devel"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := generate.Generate(generate.Input{Config: cfg, MonitorNamespace: "monitoring"})
	if err != nil {
		t.Fatal(err)
	}

	for _, ns := range []string{namespace, "monitoring"} {
		createOrUpdate(ctx, t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	crds := []*apiextensionsv1.CustomResourceDefinition{
		standInCRD(monitoringv1.SchemeGroupVersion.Group, monitoringv1.ServiceMonitorsKind, monitoringv1.ServiceMonitorName, false),
		standInCRD(monitoringv1.SchemeGroupVersion.Group, monitoringv1.PrometheusRuleKind, monitoringv1.PrometheusRuleName, false),
		standInCRD("security.openshift.io", strategy.KindSecurityContextConstraints, "securitycontextconstraints", true),
		standInCRD("route.openshift.io", strategy.KindRoute, "routes", false),
	}
	for _, crd := range s.CRDs {
		crds = append(crds, crd.DeepCopy())
	}
	var names []string
	for _, crd := range crds {
		createOrUpdate(ctx, t, c, crd)
		names = append(names, crd.Name)
	}
	waitEstablished(ctx, t, c, names)

	accepted := 0
	for _, o := range s.Objects() {
		if _, isCRD := o.(*apiextensionsv1.CustomResourceDefinition); isCRD {
			continue
		}
		obj := o.DeepCopyObject().(client.Object)
		if secret, ok := obj.(*corev1.Secret); ok && secret.Type == corev1.SecretTypeTLS {
			// As upstream's, the strategy's certificate Secrets are empty shells the
			// operator fills when it writes them.
			secret.Data = map[string][]byte{corev1.TLSCertKey: []byte("x"), corev1.TLSPrivateKeyKey: []byte("x")}
		}
		kind := o.GetObjectKind().GroupVersionKind().Kind
		// The RESTMapper learns the new CRDs lazily; retry "no matches for kind" briefly.
		sandboxtest.Eventually(t, time.Minute, "dry-run create of "+kind+" "+o.GetName(), func() (bool, error) {
			err := c.Create(ctx, obj, client.DryRunAll)
			if err != nil && strings.Contains(err.Error(), "no matches for kind") {
				obj = o.DeepCopyObject().(client.Object)
				return false, err
			}
			if err != nil {
				t.Fatalf("the API server rejects %s %s/%s: %v", kind, o.GetNamespace(), o.GetName(), err)
			}
			return true, nil
		})
		accepted++
	}
	t.Logf("%d CRDs applied, %d objects accepted by a server-side dry run", len(s.CRDs), accepted)
	return s
}

// testNodeRestriction installs virt-handler's identity and the node-restriction
// policy for real, then acts as virt-handler on its own node (the node name its
// pod-bound token carries): kubevirt.io labels may change, other labels and the
// node's spec may not, and another node not at all.
func testNodeRestriction(ctx context.Context, t *testing.T, admin client.Client, cfg *rest.Config, s *strategy.Strategy) {
	for _, o := range s.Objects() {
		switch o.GetObjectKind().GroupVersionKind().Kind {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
			if o.GetName() == "kubevirt-handler" || strings.HasPrefix(o.GetName(), "kubevirt-node-restriction") {
				createOrUpdate(ctx, t, admin, o.DeepCopyObject().(client.Object))
			}
		}
	}
	nodes := &corev1.NodeList{}
	if err := admin.List(ctx, nodes); err != nil || len(nodes.Items) == 0 {
		t.Fatalf("no node: %v", err)
	}
	nodeName := nodes.Items[0].Name
	as := func(node string) client.Client {
		c := rest.CopyConfig(cfg)
		c.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":kubevirt-handler",
			Extra: map[string][]string{"authentication.kubernetes.io/node-name": {node}}}
		return newClient(t, c)
	}
	handler := as(nodeName)
	// Each call sets a new value: until the policy is active, a foreign label goes
	// through, and re-setting the same value would then be no change at all.
	attempt := 0
	label := func(key string) error {
		attempt++
		patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:"v%d"}}}`, key, attempt))
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
		return handler.Patch(ctx, node, client.RawPatch(types.MergePatchType, patch))
	}
	sandboxtest.Eventually(t, time.Minute, "the policy denies a foreign label", func() (bool, error) {
		err := label("example.com/foreign")
		return err != nil && strings.Contains(err.Error(), "kubevirt-node-restriction-policy"), err
	})
	for _, key := range []string{"kubevirt.io/schedulable", "cpu-model.node.kubevirt.io/Haswell"} {
		if err := label(key); err != nil {
			t.Errorf("virt-handler may not set %s: %v", key, err)
		}
	}
	taint := []byte(`{"spec":{"taints":[{"key":"k","value":"v","effect":"NoSchedule"}]}}`)
	err := handler.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, client.RawPatch(types.MergePatchType, taint))
	if err == nil || !strings.Contains(err.Error(), "spec") {
		t.Errorf("virt-handler tainted a node: %v", err)
	}
	other := []byte(`{"metadata":{"labels":{"kubevirt.io/schedulable":"false"}}}`)
	err = as("another-node").Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}, client.RawPatch(types.MergePatchType, other))
	if err == nil || !strings.Contains(err.Error(), "cannot modify this node") {
		t.Errorf("virt-handler of another node labelled this one: %v", err)
	}
}
