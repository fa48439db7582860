package dump

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

const ns = "kubevirt"

func testConfig(namespace string) *deployid.Config {
	cfg := &deployid.Config{Namespace: namespace, Registry: "quay.io/kubevirt", KubeVirtVersion: "v1.9.0"}
	cfg.ID = cfg.ComputeID()
	return cfg
}

func envFor(cfg *deployid.Config) deployid.MapEnv {
	return deployid.MapEnv{ConfigEnv: cfg.UpstreamJSON()}
}

// writeCounter is a fake client that counts writes.
type writeCounter struct {
	client.WithWatch
	creates int
}

func newClient(t *testing.T, objs ...client.Object) *writeCounter {
	t.Helper()
	w := &writeCounter{}
	w.WithWatch = fake.NewClientBuilder().WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.creates++
			return c.Create(ctx, obj, opts...)
		},
		Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
			t.Error("unexpected Update")
			return nil
		},
		Delete: func(context.Context, client.WithWatch, client.Object, ...client.DeleteOption) error {
			t.Error("unexpected Delete")
			return nil
		},
	}).Build()
	return w
}

func strategyConfigMaps(t *testing.T, c client.Client, namespace string) []corev1.ConfigMap {
	t.Helper()
	list := &corev1.ConfigMapList{}
	if err := c.List(context.Background(), list, client.InNamespace(namespace), client.HasLabels{metadata.InstallStrategyLabel}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func monitoring() []client.Object {
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: "prometheus-k8s"}},
	}
}

func TestRunCreatesTheConfigMapAndARerunWritesNothing(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(ns)
	c := newClient(t)
	if err := Run(ctx, c, envFor(cfg), logr.Discard()); err != nil {
		t.Fatal(err)
	}
	cms := strategyConfigMaps(t, c, ns)
	if len(cms) != 1 || c.creates != 1 {
		t.Fatalf("%d ConfigMaps after %d creates, want 1", len(cms), c.creates)
	}
	meta, _ := strategy.Meta(&cms[0])
	if meta.ID != cfg.ID || meta.MonitorNamespace != "" || !meta.MonitorRecorded || meta.Version != "v1.9.0" {
		t.Errorf("meta %+v", meta)
	}
	s, err := strategy.Decode(&cms[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(s.ServiceMonitors) != 0 {
		t.Errorf("no monitoring, yet %d ServiceMonitors", len(s.ServiceMonitors))
	}
	t.Logf("default strategy: %d objects, %d bytes encoded", len(s.Objects()), len(cms[0].Data[strategy.ManifestsKey]))

	if err := Run(ctx, c, envFor(cfg), logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if c.creates != 1 {
		t.Errorf("the second run wrote: %d creates", c.creates)
	}
}

func TestRunRegeneratesWhenMonitoringAppeared(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(ns)
	// A strategy generated before monitoring existed. The fake client stamps no
	// creationTimestamp, so "newest" falls to the name: this one sorts before any
	// generated name, as an older ConfigMap would on a real API server.
	stale, err := strategy.Encode(&strategy.Strategy{ServiceAccounts: []*corev1.ServiceAccount{{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: metav1.ObjectMeta{Name: "kubevirt-handler", Namespace: ns},
	}}}, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	stale.Name = "kubevirt-install-strategy-00000"
	c := newClient(t, append(monitoring(), stale)...)

	if err := Run(ctx, c, envFor(cfg), logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if c.creates != 1 {
		t.Fatalf("creates %d, want a new ConfigMap", c.creates)
	}
	cms := strategyConfigMaps(t, c, ns)
	inForce := strategy.FindForID(cms, cfg.ID)
	if len(cms) != 2 || inForce.Name == stale.Name || !strategy.Fresh(inForce, "monitoring") {
		t.Fatalf("want the stale one and a fresh one in force; got %d, in force %s", len(cms), inForce.Name)
	}
	if obsolete := strategy.Obsolete(cms, cfg.ID, cfg.ID); len(obsolete) != 1 || obsolete[0].Name != stale.Name {
		t.Errorf("Obsolete should now name the stale ConfigMap, got %d", len(obsolete))
	}
	s, err := strategy.Decode(inForce)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.ServiceMonitors) == 0 || len(s.PrometheusRules) == 0 {
		t.Error("the regenerated strategy has no ServiceMonitor or PrometheusRule")
	}

	if err := Run(ctx, c, envFor(cfg), logr.Discard()); err != nil {
		t.Fatal(err)
	}
	if c.creates != 1 {
		t.Errorf("a rerun with the fresh ConfigMap in force wrote again (%d creates)", c.creates)
	}
}

func TestRunUsesPodNamespaceWhenTheConfigHasNone(t *testing.T) {
	cfg := testConfig("")
	env := envFor(cfg)
	env[NamespaceEnv] = "from-pod"
	c := newClient(t)
	if err := Run(context.Background(), c, env, logr.Discard()); err != nil {
		t.Fatal(err)
	}
	cms := strategyConfigMaps(t, c, "from-pod")
	if len(cms) != 1 {
		t.Fatalf("%d ConfigMaps in from-pod", len(cms))
	}
	if meta, _ := strategy.Meta(&cms[0]); meta.ID != cfg.ID {
		t.Errorf("identifier %s, want the config's %s", meta.ID, cfg.ID)
	}
}

func TestRunErrors(t *testing.T) {
	good := testConfig(ns)
	unknown := testConfig(ns)
	unknown.KubeVirtVersion = "v1.7.4"
	cases := []struct {
		name    string
		env     deployid.MapEnv
		failOn  string // "create" or "list"
		wantIs  error
		wantMsg string
	}{
		{"missing config", deployid.MapEnv{}, "", ErrNoConfig, "no config provided"},
		{"empty config", deployid.MapEnv{ConfigEnv: "  "}, "", ErrNoConfig, "no config provided"},
		{"invalid JSON", deployid.MapEnv{ConfigEnv: "{not json"}, "", ErrInvalidConfig, "invalid JSON"},
		{"no id", deployid.MapEnv{ConfigEnv: `{"namespace":"kubevirt","kubeVirtVersion":"v1.9.0"}`}, "", ErrInvalidConfig, "no id"},
		{"invalid pull policy", deployid.MapEnv{ConfigEnv: `{"id":"x","namespace":"kubevirt","kubeVirtVersion":"v1.9.0","additionalProperties":{"ImagePullPolicy":"Sometimes"}}`},
			"", ErrInvalidConfig, `imagePullPolicy "Sometimes"`},
		{"no namespace anywhere", envFor(testConfig("")), "", ErrInvalidConfig, "POD_NAMESPACE"},
		{"a release the builtin generator does not know", envFor(unknown), "", nil,
			`failed to create new install strategy configmap: generate: KubeVirt "v1.7.4": not a KubeVirt release the builtin generator knows (it knows v1.9, v1.8)`},
		{"create fails", envFor(good), "create", nil, "failed to create new install strategy configmap: boom"},
		{"list fails", envFor(good), "list", nil, "failed to create new install strategy configmap: listing install strategy configmaps: boom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if tc.failOn == "create" {
						return errors.New("boom")
					}
					return c.Create(ctx, obj, opts...)
				},
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					if tc.failOn == "list" {
						return errors.New("boom")
					}
					return c.List(ctx, list, opts...)
				},
			}).Build()
			err := Run(context.Background(), c, tc.env, logr.Discard())
			if err == nil {
				t.Fatal("no error")
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("error %q is not %q", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tc.wantMsg)
			}
			if tc.name == "missing config" && err.Error() != "no config provided" {
				t.Errorf("error %q, want exactly upstream's", err)
			}
		})
	}
}
