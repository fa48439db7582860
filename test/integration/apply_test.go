package integration

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// applyHarness runs the apply engine like the controller does, through a client
// that counts every write request.
type applyHarness struct {
	t      *testing.T
	c      client.Client
	writes atomic.Int32
	gens   []v1.GenerationStatus
}

func newApplyHarness(t *testing.T) *applyHarness {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		apiregistrationv1.AddToScheme, monitoringv1.AddToScheme, v1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	base, err := client.NewWithWatch(restConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	h := &applyHarness{t: t}
	count := func() { h.writes.Add(1) }
	h.c = interceptor.NewClient(base, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			count()
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			count()
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			count()
			return c.Patch(ctx, obj, p, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			count()
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			count()
			return c.Delete(ctx, obj, opts...)
		},
	})
	return h
}

// reconcile observes, plans and applies every step (envtest runs no workload
// controllers, so it does not wait for rollovers) and returns the write count.
func (h *applyHarness) reconcile(ctx context.Context, desired *strategy.Strategy) int {
	h.t.Helper()
	before := h.writes.Load()
	live, err := apply.LiveObjects(ctx, h.c, desired)
	if err != nil {
		h.t.Fatal(err)
	}
	ap := &apply.Applier{Client: h.c}
	for _, step := range apply.Steps(desired, apply.Install) {
		gens, err := ap.Apply(ctx, apply.Plan(step.Objects, live, h.gens))
		h.gens = apply.MergeGenerations(h.gens, gens)
		if err != nil {
			h.t.Fatal(err)
		}
	}
	return int(h.writes.Load() - before)
}

func smallStrategy(t *testing.T, ns string) *strategy.Strategy {
	t.Helper()
	labels := map[string]string{"kubevirt.io": "virt-api"}
	s := &strategy.Strategy{}
	for _, o := range []client.Object{
		&corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Name: "kubevirt-apiserver", Namespace: ns}},
		&rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: "apply-test-" + ns},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}},
		&corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: "virt-api", Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: labels,
				Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(8443)}}}},
		&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "virt-api", Namespace: ns, Labels: labels},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(2)),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{ServiceAccountName: "kubevirt-apiserver", Containers: []corev1.Container{{
						Name: "virt-api", Image: "quay.io/kubevirt/virt-api:v1.9.0", Command: []string{"virt-api"}}}}}}},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "kubevirt-ca", Namespace: ns}, Data: map[string]string{"ca-bundle": "pem"}},
	} {
		if err := s.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// Apply a strategy, re-apply it with zero writes, and revert out-of-band edits
// with exactly one write each; then an object dropped from the strategy is an
// orphan and is deleted.
func TestApplyEngineConvergesWithoutWritesAtRest(t *testing.T) {
	ctx := context.Background()
	ns := createNamespace(t, ctx, "apply")
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: ns}}
	cfg, err := deployid.FromKubeVirt(kv, deployid.MapEnv{deployid.EnvVirtOperatorImage: "quay.io/kubevirt/virt-operator:v1.9.0"})
	if err != nil {
		t.Fatal(err)
	}
	desired, err := apply.Customize(smallStrategy(t, ns), cfg)
	if err == nil {
		desired = apply.Desired(desired, cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "apply-test-" + ns}})
	})
	h := newApplyHarness(t)

	if n := h.reconcile(ctx, desired); n != 6 {
		t.Fatalf("first apply: %d writes, want 6 (5 objects and virt-api's PDB)", n)
	}
	if n := h.reconcile(ctx, desired); n != 0 {
		t.Fatalf("second apply: %d writes, want none at rest", n)
	}

	// Out-of-band edits through the unwrapped client.
	key := client.ObjectKey{Namespace: ns, Name: "virt-api"}
	d := &appsv1.Deployment{}
	if err := k8s.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Image = "evil/virt-api:latest"
	if err := k8s.Update(ctx, d); err != nil {
		t.Fatal(err)
	}
	if n := h.reconcile(ctx, desired); n != 1 {
		t.Errorf("after the image edit: %d writes, want 1", n)
	}
	if err := k8s.Get(ctx, key, d); err != nil {
		t.Fatal(err)
	}
	if got := d.Spec.Template.Spec.Containers[0].Image; got != "quay.io/kubevirt/virt-api:v1.9.0" {
		t.Errorf("image = %q, not reverted", got)
	}

	role := &rbacv1.ClusterRole{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: "apply-test-" + ns}, role); err != nil {
		t.Fatal(err)
	}
	want := role.Rules
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}})
	if err := k8s.Update(ctx, role); err != nil {
		t.Fatal(err)
	}
	if n := h.reconcile(ctx, desired); n != 1 {
		t.Errorf("after the rule edit: %d writes, want 1", n)
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(role), role); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("rules = %v, not reverted to %v", role.Rules, want)
	}
	if n := h.reconcile(ctx, desired); n != 0 {
		t.Errorf("after the reverts: %d writes, want none at rest", n)
	}

	// A write of the operator's that its record missed (the process stopped,
	// or its status write failed, right after it): a fresh pass with the older
	// record takes the newer generation as its own and writes nothing, where
	// it used to re-apply it as an edit out of band (which the API server
	// answers with no event, so nothing woke the rollout).
	before := h.gens
	scaled := *desired
	scaled.Deployments = []*appsv1.Deployment{desired.Deployments[0].DeepCopy()}
	scaled.Deployments[0].Spec.Replicas = ptr.To(int32(3))
	scaled.Deployments[0] = apply.Desired(&strategy.Strategy{Deployments: scaled.Deployments}, cfg).Deployments[0]
	if n := h.reconcile(ctx, &scaled); n != 2 {
		t.Fatalf("the scale: %d writes, want 2 (virt-api and its PDB)", n)
	}
	h.gens = before // the record of that write is lost
	if n := h.reconcile(ctx, &scaled); n != 0 {
		t.Errorf("a fresh pass over its own last write: %d writes, want none", n)
	}
	if n := h.reconcile(ctx, desired); n != 2 {
		t.Fatalf("back to 2 replicas: %d writes, want 2", n)
	}

	// Another manager's additions to maps and keyed lists (a ConfigMap key, a
	// Service port) stay under server-side apply: they are not drift, or every
	// reconcile would write again.
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kubevirt-ca"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["added-by-someone-else"] = "theirs"
	if err := k8s.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{}
	if err := k8s.Get(ctx, key, svc); err != nil {
		t.Fatal(err)
	}
	svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "theirs", Port: 9999, Protocol: corev1.ProtocolTCP})
	svc.Spec.Ports[0].Name = "https"
	if err := k8s.Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if n := h.reconcile(ctx, desired); n != 0 {
			t.Errorf("pass %d after another manager's additions: %d writes, want none", i+1, n)
		}
	}

	// Drop the ConfigMap from the strategy: it becomes the only orphan of ours.
	smaller := *desired
	smaller.ConfigMaps = nil
	managed, err := apply.ListManaged(ctx, h.c, apply.Scope{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	var orphans []client.Object
	for _, o := range apply.Orphans(apply.Refs(apply.Steps(&smaller, apply.Install)), managed) {
		if o.GetNamespace() == ns || o.GetName() == role.Name {
			orphans = append(orphans, o)
		}
	}
	if len(orphans) != 1 || apply.RefOf(orphans[0]) != (apply.ObjectRef{Kind: "ConfigMap", Namespace: ns, Name: "kubevirt-ca"}) {
		t.Fatalf("orphans = %v", orphans)
	}
	if _, err := (&apply.Applier{Client: h.c}).Apply(ctx, apply.Deletions(orphans, "not in the strategy")); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "kubevirt-ca"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("orphan ConfigMap still there: %v", err)
	}
	if n := h.reconcile(ctx, &smaller); n != 0 {
		t.Errorf("smaller strategy: %d writes, want none", n)
	}
}
