package apply

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, apiregistrationv1.AddToScheme, monitoringv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

type recordingWriter struct{ got []Action }

func (w *recordingWriter) Write(_ context.Context, a Action) (client.Object, error) {
	w.got = append(w.got, a)
	return nil, nil
}

func TestApplierHandsDaemonSetsToTheirWriter(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).Build()
	w := &recordingWriter{}
	ap := &Applier{Client: c, DaemonSets: w}
	desired := []client.Object{daemonSet(VirtHandler), serviceAccount("sa")}
	gens, err := ap.Apply(ctx, Plan(desired, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.got) != 1 || w.got[0].Object.GetName() != VirtHandler || len(gens) != 0 {
		t.Errorf("writer got %d actions, %d generations", len(w.got), len(gens))
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sa"}, &corev1.ServiceAccount{}); err != nil {
		t.Errorf("the ServiceAccount was not applied: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: VirtHandler}, &appsv1.DaemonSet{}); err == nil {
		t.Error("the Applier wrote the DaemonSet itself")
	}
}

func TestApplierErrorNamesTheObject(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).Build()
	ap := &Applier{Client: c, DaemonSets: failingWriter{}}
	_, err := ap.Apply(context.Background(), Plan([]client.Object{daemonSet(VirtHandler)}, nil, nil))
	if err == nil || err.Error() != "Create DaemonSet kubevirt/virt-handler: boom" {
		t.Errorf("err = %v", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write(context.Context, Action) (client.Object, error) {
	return nil, errors.New("boom")
}

func TestServedOnly(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.ServiceMonitorsKind), meta.RESTScopeNamespace)
	s := testStrategy(t)
	s.ServiceMonitors = []*monitoringv1.ServiceMonitor{{}}
	s.PrometheusRules = []*monitoringv1.PrometheusRule{{}}
	scc := &unstructured.Unstructured{}
	scc.SetGroupVersionKind(sccGVK)
	s.SecurityContextConstraints = []*unstructured.Unstructured{scc}
	out, err := ServedOnly(s, mapper)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.ServiceMonitors) != 1 || out.PrometheusRules != nil || out.SecurityContextConstraints != nil || len(out.Deployments) != len(s.Deployments) {
		t.Errorf("ServedOnly kept %d ServiceMonitors, %d PrometheusRules, %d SCCs", len(out.ServiceMonitors), len(out.PrometheusRules), len(out.SecurityContextConstraints))
	}
	if len(s.PrometheusRules) != 1 {
		t.Error("the input was modified")
	}
}

func TestLiveObjectsAndListManaged(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).Build()
	d := Desired(testStrategy(t), testConfig(t, nil))
	live, err := LiveObjects(ctx, c, d)
	if err != nil || len(live) != 0 {
		t.Fatalf("empty cluster: %d live, %v", len(live), err)
	}
	ap := &Applier{Client: c}
	for _, step := range Steps(d, Install) {
		if _, err := ap.Apply(ctx, Plan(step.Objects, live, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if live, err = LiveObjects(ctx, c, d); err != nil || len(live) != len(d.Objects())+4 {
		t.Fatalf("%d live objects (want every object and 4 PDBs), %v", len(live), err)
	}
	managed, err := ListManaged(ctx, c, Scope{Namespace: d.Deployments[0].Namespace})
	if err != nil {
		t.Fatal(err)
	}
	if len(managed) != len(live) {
		t.Errorf("ListManaged found %d, want %d", len(managed), len(live))
	}
	// Limited to the strategy's kinds, an uninstall finds the same objects.
	if byKind, err := ListManaged(ctx, c, Scope{Namespace: d.Deployments[0].Namespace, Kinds: StrategyKinds(d)}); err != nil || len(byKind) != len(live) {
		t.Errorf("ListManaged of the strategy's kinds found %d, want %d (%v)", len(byKind), len(live), err)
	}
	// Split by kind, the two halves find the same objects between them.
	for _, whole := range []Scope{{Namespace: d.Deployments[0].Namespace}, {Namespace: d.Deployments[0].Namespace, Kinds: StrategyKinds(d)}} {
		crdScope, rest := whole.Split("CustomResourceDefinition")
		crds, err1 := ListManaged(ctx, c, crdScope)
		others, err2 := ListManaged(ctx, c, rest)
		if err1 != nil || err2 != nil || len(crds)+len(others) != len(live) {
			t.Errorf("split %v: %d CRDs and %d others (%v, %v), want %d in all", whole.Kinds != nil, len(crds), len(others), err1, err2, len(live))
		}
		for _, o := range crds {
			if RefOf(o).Kind != "CustomResourceDefinition" {
				t.Errorf("the CRD half found %v", RefOf(o))
			}
		}
	}
	// Scoped to another namespace, only the cluster-scoped objects are found.
	clusterScoped := 0
	for ref := range live {
		if ref.Namespace == "" {
			clusterScoped++
		}
	}
	if got, err := ListManaged(ctx, c, Scope{Namespace: "elsewhere"}); err != nil || len(got) != clusterScoped {
		t.Errorf("ListManaged in another namespace found %d (%v), want the %d cluster-scoped objects", len(got), err, clusterScoped)
	}
	if o := Orphans(Refs(Steps(d, Upgrade)), managed); len(o) != 0 {
		t.Errorf("orphans right after install: %v", names(o))
	}
}

func TestScopeSplit(t *testing.T) {
	for _, tc := range []struct {
		name       string
		kinds      map[string]bool
		only, rest []string
	}{
		{"every kind", nil, []string{"CustomResourceDefinition"}, nil},
		{"the kind among others", map[string]bool{"CustomResourceDefinition": true, "Secret": true}, []string{"CustomResourceDefinition"}, []string{"Secret"}},
		{"without the kind", map[string]bool{"Secret": true}, nil, []string{"Secret"}},
		{"nothing", map[string]bool{}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			only, rest := Scope{Namespace: "kubevirt", Others: []string{"monitoring"}, Kinds: tc.kinds}.Split("CustomResourceDefinition")
			if got := listed(only); !slices.Equal(got, tc.only) {
				t.Errorf("only lists %v, want %v", got, tc.only)
			}
			if tc.kinds == nil {
				if got := listed(rest); len(got) != len(managedLists)-1 || slices.Contains(got, "CustomResourceDefinition") {
					t.Errorf("rest lists %v, want every other kind", got)
				}
			} else if got := listed(rest); !slices.Equal(got, tc.rest) {
				t.Errorf("rest lists %v, want %v", got, tc.rest)
			}
			if only.Namespace != "kubevirt" || rest.Namespace != "kubevirt" || len(only.Others) != 1 || len(rest.Others) != 1 {
				t.Errorf("split lost the namespaces: %+v %+v", only, rest)
			}
		})
	}
}

// listed is the kinds a scope lists, sorted.
func listed(s Scope) []string {
	var out []string
	for _, ml := range managedLists {
		if s.Kinds == nil || s.Kinds[ml.kind.Kind] {
			out = append(out, ml.kind.Kind)
		}
	}
	slices.Sort(out)
	return out
}

// Each kind ListManaged lists is named as its list's items are.
func TestManagedListsNameTheirKinds(t *testing.T) {
	scheme := testScheme(t)
	for _, ml := range managedLists {
		list := ml.list()
		gvk := list.GetObjectKind().GroupVersionKind()
		if gvk.Empty() {
			gvks, _, err := scheme.ObjectKinds(list)
			if err != nil {
				t.Fatalf("%T: %v", list, err)
			}
			gvk = gvks[0]
		}
		if got := (schema.GroupKind{Group: gvk.Group, Kind: strings.TrimSuffix(gvk.Kind, "List")}); got != ml.kind {
			t.Errorf("%T lists %v, the table says %v", list, got, ml.kind)
		}
	}
}

// Upstream's virt-api repeats container port 8443 (as virt-api and as metrics):
// server-side apply refuses that, so such an object is created, then replaced.
func TestRepeatedPortsAreWrittenWithoutServerSideApply(t *testing.T) {
	ctx := context.Background()
	d := deployment(VirtAPI, 2)
	d.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{
		{Name: "virt-api", ContainerPort: 8443, Protocol: corev1.ProtocolTCP},
		{Name: "metrics", ContainerPort: 8443, Protocol: corev1.ProtocolTCP},
	}
	if !repeatedKeys(d) || repeatedKeys(deployment(VirtController, 2)) {
		t.Fatal("repeatedKeys misjudges")
	}
	applies := 0
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithInterceptorFuncs(interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			applies++
			return c.Apply(ctx, obj, opts...)
		},
	}).Build()
	ap := &Applier{Client: c}
	for i := range 2 {
		if _, err := ap.ServerSideApply(ctx, d); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	got := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(d), got); err != nil || len(got.Spec.Template.Spec.Containers[0].Ports) != 2 {
		t.Fatalf("written: %v %v", got.Spec.Template.Spec.Containers, err)
	}
	if applies != 0 {
		t.Errorf("%d server-side applies of an object with repeated ports", applies)
	}
}
