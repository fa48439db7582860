// Package fidelity_test holds the builtin generator against KubeVirt's own: for
// each supported release and a set of deployment configs, the install-strategy Job
// runs once with that release's own virt-operator (from ../shared/upstream, on the
// sandbox's Job runner) and once with ours, both in --dump-install-strategy mode on
// the same config, and the two strategies are compared object by object and field by
// field. Every difference must be on the allow-list below, with its reason.
package fidelity_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/config/rbac"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/sandbox"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/dumpjob"
	"github.com/virt-operator/virt-operator/internal/strategy/strategydiff"
)

const (
	namespace = "kubevirt" // upstream's dump outside a pod takes its own namespace to be kubevirt
	// ownImage is this operator's image: the Job runner runs it with our binary.
	ownImage = "ghcr.io/virt-operator/virt-operator:devel"
)

// allowed are the deliberate differences, each with its reason.
var allowed = []strategydiff.Rule{
	{Kind: "Deployment", Path: ".spec.template.spec.containers[0].env", Unordered: true,
		Reason: "upstream orders the pass-through variables (KV_IO_EXTRA_ENV_*) by Go map iteration, which changes from run to run; ours are sorted by name"},
	{Kind: "DaemonSet", Path: ".spec.template.spec.containers[0].env", Unordered: true,
		Reason: "upstream orders the pass-through variables (KV_IO_EXTRA_ENV_*) by Go map iteration, which changes from run to run; ours are sorted by name"},
}

// fidelityConfig is one KubeVirt CR and operator environment to compare on.
type fidelityConfig struct {
	name string
	spec func(s *v1.KubeVirtSpec)
	env  map[string]string
	// setUp prepares the cluster (monitoring, OpenShift APIs) and returns its undo.
	setUp func(t *testing.T, c client.Client) func()
}

func configs(release string) []fidelityConfig {
	gates := func(s *v1.KubeVirtSpec) {
		manual := deployid.RoleAggregationManual
		network := "migration-net"
		s.Configuration.RoleAggregationStrategy = &manual
		s.Configuration.MigrationConfiguration = &v1.MigrationConfiguration{Network: &network}
		s.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{
			FeatureGates: []string{"PersistentReservation", "VMStatsCollector", "Plugins", "OptOutRoleAggregation",
				"DecentralizedLiveMigration", "ContainerPathVolumes"},
			DisabledFeatureGates: []string{"ExternalNetResourceInjection"},
		}
		if strings.HasPrefix(release, "v1.8") { // v1.8 only counts listed gates: turn Template on by listing it
			s.Configuration.DeveloperConfiguration.FeatureGates = append(s.Configuration.DeveloperConfiguration.FeatureGates, "Template")
		} else {
			s.Configuration.DeveloperConfiguration.DisabledFeatureGates = append(s.Configuration.DeveloperConfiguration.DisabledFeatureGates, "Template")
		}
	}
	placement := &v1.ComponentConfig{NodePlacement: &v1.NodePlacement{
		NodeSelector: map[string]string{"node-role.kubernetes.io/infra": ""},
		Tolerations:  []corev1.Toleration{{Key: "infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
	}}
	return []fidelityConfig{
		{name: "default"},
		{name: "monitoring present", setUp: monitoring},
		{name: "OpenShift", setUp: openShift},
		{name: "custom registry and image prefix", env: map[string]string{
			deployid.EnvVirtOperatorImage: "registry.example.com:5000/mirror/kv-virt-operator:" + release}},
		{name: "imagePullPolicy and pull secrets", spec: func(s *v1.KubeVirtSpec) {
			s.ImagePullPolicy = corev1.PullAlways
			s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "mirror"}}
		}},
		{name: "infra and workloads placement", setUp: infraNodes, spec: func(s *v1.KubeVirtSpec) {
			r := uint8(3)
			s.Infra = placement.DeepCopy()
			s.Infra.Replicas = &r
			s.Workloads = placement.DeepCopy()
		}},
		{name: "feature gates that change components", spec: gates},
		{name: "product name, version and component", spec: func(s *v1.KubeVirtSpec) {
			s.ProductName, s.ProductVersion, s.ProductComponent = "acme-virt", "4.2.0", "acme-compute"
		}},
		{name: "KV_IO_EXTRA_ENV_*", env: map[string]string{
			"KV_IO_EXTRA_ENV_HTTP_PROXY": "http://proxy.example.com:3128", "KV_IO_EXTRA_ENV_NO_PROXY": ".svc,.cluster.local",
			"KV_IO_EXTRA_ENV_TRACE": "1"}},
	}
}

func TestBuiltinMatchesUpstream(t *testing.T) {
	releases := []string{"v1.8.4", "v1.9.0"}
	programs := map[string]string{}
	for _, r := range releases {
		programs["quay.io/kubevirt/virt-operator:"+r] = sandboxtest.UpstreamBinary(t, r, "virt-operator")
		programs["registry.example.com:5000/mirror/kv-virt-operator:"+r] = programs["quay.io/kubevirt/virt-operator:"+r]
	}
	s := sandboxtest.Start(t, 1, sandboxtest.WithHostExec(t), func(o *sandbox.Options) { o.HostExecImages = programs })
	c := newClient(t, s)
	// The namespace and config/rbac: upstream's dump runs under the Job's own
	// ServiceAccount, with exactly its RBAC (the Job runner gives each pod's
	// processes a token of the pod's account).
	sandboxtest.InstallOperatorManifests(t, c, namespace)
	var (
		mu      sync.Mutex
		summary []string
	)
	t.Cleanup(func() { // once the parallel subtests below have run too
		sort.Strings(summary)
		t.Logf("summary:\n%s\nallow-list:\n%s", strings.Join(summary, "\n"), allowList())
	})
	for _, release := range releases {
		for _, fc := range configs(release) {
			t.Run(release+"/"+fc.name, func(t *testing.T) {
				// A config that changes the cluster (setUp) runs alone, now; the
				// others only read it and run side by side once these are done,
				// their Jobs named apart by their deployment IDs.
				if fc.setUp != nil {
					defer fc.setUp(t, c)()
				} else {
					t.Parallel()
				}
				cfg := configFor(t, release, fc)
				upstream := dump(t, c, cfg, upstreamImage(release, fc))
				ours := dump(t, c, cfg, ownImage)
				rep, err := strategydiff.Compare(upstream, ours, allowed)
				if err != nil {
					t.Fatal(err)
				}
				line := fmt.Sprintf("%-7s %-38s identical %3d, differing %d (all allowed: %v), missing %d, extra %d; RBAC tuples %s",
					release, fc.name, len(rep.Identical), len(rep.Differing), rep.Clean(), len(rep.Missing), len(rep.Extra), rbacCoverage(upstream, ours))
				mu.Lock()
				summary = append(summary, line)
				mu.Unlock()
				t.Log(line)
				report(t, rep)
			})
		}
	}
}

func upstreamImage(release string, fc fidelityConfig) string {
	if img := fc.env[deployid.EnvVirtOperatorImage]; img != "" {
		return img
	}
	return "quay.io/kubevirt/virt-operator:" + release
}

// configFor is the deployment config the operator computes for fc, running as its
// own image (or as the config's operator image) with spec.imageTag naming release.
func configFor(t *testing.T, release string, fc fidelityConfig) *deployid.Config {
	t.Helper()
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: namespace}}
	if fc.spec != nil {
		fc.spec(&kv.Spec)
	}
	env := deployid.MapEnv{deployid.EnvVirtOperatorImage: ownImage}
	for k, v := range fc.env {
		env[k] = v
	}
	if env[deployid.EnvVirtOperatorImage] == ownImage {
		kv.Spec.ImageTag = release
	}
	cfg, err := deployid.FromKubeVirt(kv, env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.KubeVirtVersion != release {
		t.Fatalf("config for %s is of KubeVirt %s", release, cfg.KubeVirtVersion)
	}
	return cfg
}

// dump runs the install-strategy Job for cfg with image and returns the strategy
// it stored; the ConfigMap and the Job are deleted again.
func dump(t *testing.T, c client.Client, cfg *deployid.Config, image string) *strategy.Strategy {
	t.Helper()
	ctx := t.Context()
	withImage := cfg.DeepCopy()
	withImage.VirtOperatorImage = image
	job := dumpjob.New(withImage, rbac.StrategyDumperServiceAccount, 0)
	if err := c.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = c.Delete(context.Background(), job, client.PropagationPolicy(metav1.DeletePropagationBackground))
	}()
	var cm *corev1.ConfigMap
	sandboxtest.Eventually(t, 2*time.Minute, "install strategy of "+image, func() (bool, error) {
		cms := &corev1.ConfigMapList{}
		if err := c.List(ctx, cms, client.InNamespace(namespace), client.HasLabels{metadata.InstallStrategyLabel}); err != nil {
			return false, err
		}
		cm = strategy.FindForID(cms.Items, cfg.ID)
		if cm != nil {
			return true, nil
		}
		got := &batchv1.Job{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(job), got); err != nil {
			return false, err
		}
		if o := dumpjob.OutcomeOf(got); o.Failed {
			t.Fatalf("the install-strategy Job with %s failed: %s", image, o.Message)
		}
		return false, nil
	})
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	s, err := strategy.Decode(cm)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func report(t *testing.T, rep *strategydiff.Report) {
	t.Helper()
	for _, p := range rep.Missing {
		if p.Allowed == "" {
			t.Errorf("missing from ours: %s", p.Ref)
		}
	}
	for _, p := range rep.Extra {
		if p.Allowed == "" {
			t.Errorf("only in ours: %s", p.Ref)
		}
	}
	for _, o := range rep.Differing {
		for _, f := range o.Disallowed() {
			t.Errorf("%s: %s", o.Ref, f)
		}
	}
}

// rbacCoverage is the share of upstream's (apiGroup, resource, verb) tuples, over
// every ClusterRole and Role, that ours grant in the same role.
func rbacCoverage(upstream, ours *strategy.Strategy) string {
	want, have := tuples(upstream), tuples(ours)
	n := 0
	for k := range want {
		if have[k] {
			n++
		}
	}
	if len(want) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d/%d (%.1f%%)", n, len(want), 100*float64(n)/float64(len(want)))
}

func tuples(s *strategy.Strategy) map[string]bool {
	out := map[string]bool{}
	add := func(role string, rules []rbacv1.PolicyRule) {
		for _, r := range rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						out[role+"|"+g+"|"+res+"|"+v] = true
					}
				}
			}
		}
	}
	for _, cr := range s.ClusterRoles {
		add(cr.Name, cr.Rules)
	}
	for _, r := range s.Roles {
		add(r.Namespace+"/"+r.Name, r.Rules)
	}
	return out
}

func allowList() string {
	var lines []string
	for _, r := range allowed {
		lines = append(lines, fmt.Sprintf("- %s %s (unordered %v): %s", r.Kind, r.Path, r.Unordered, r.Reason))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func newClient(t *testing.T, s *sandbox.Sandbox) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(s.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// monitoring makes Prometheus' ServiceAccount appear in the monitoring namespace.
func monitoring(t *testing.T, c client.Client) func() {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: deployid.DefaultMonitorAccount, Namespace: "monitoring"}}
	for _, o := range []client.Object{ns, sa} {
		if err := c.Create(t.Context(), o); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	return func() {
		// The ServiceAccount alone decides detection; deleting it is immediate,
		// unlike the namespace.
		if err := c.Delete(context.Background(), sa); err != nil {
			t.Error(err)
		}
	}
}

// openShift serves the OpenShift APIs the strategy's SCCs and Route belong to.
// infraNodes gives every node the infra placement's label: the strategy Job
// runs where the control plane does, so with spec.infra it needs such a node.
func infraNodes(t *testing.T, c client.Client) func() {
	t.Helper()
	const label = "node-role.kubernetes.io/infra"
	relabel := func(value *string) {
		nodes := &corev1.NodeList{}
		if err := c.List(t.Context(), nodes); err != nil {
			t.Fatal(err)
		}
		for i := range nodes.Items {
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]*string{label: value}}})
			if err := c.Patch(t.Context(), &nodes.Items[i], client.RawPatch(types.MergePatchType, patch)); err != nil {
				t.Fatal(err)
			}
		}
	}
	empty := ""
	relabel(&empty)
	return func() { relabel(nil) }
}

func openShift(t *testing.T, c client.Client) func() {
	t.Helper()
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, def := range []struct{ group, kind, plural string }{
		{"security.openshift.io", "SecurityContextConstraints", "securitycontextconstraints"},
		{"route.openshift.io", "Route", "routes"},
	} {
		scope := apiextensionsv1.NamespaceScoped
		if def.kind == "SecurityContextConstraints" {
			scope = apiextensionsv1.ClusterScoped
		}
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: def.plural + "." + def.group},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: def.group, Scope: scope,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: def.kind, Plural: def.plural},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: ptrTo(true)}}}},
			},
		}
		if err := c.Create(t.Context(), crd); err != nil {
			t.Fatal(err)
		}
		crds = append(crds, crd)
	}
	return func() {
		for _, crd := range crds {
			if err := c.Delete(context.Background(), crd); err != nil {
				t.Error(err)
			}
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
