package uninstall

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/strategysource"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, v1.AddToScheme, strategy.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	return scheme
}

// uninstaller reads the cache through c and the API through live.
func uninstaller(c client.Client, live client.Reader) *Uninstaller {
	return &Uninstaller{Client: c, Live: live, Namespace: "kubevirt",
		Strategies: &strategysource.Source{Client: c, APIReader: live, Namespace: "kubevirt", ServiceAccount: "virt-operator-strategy-dumper"},
		Clock:      clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))}
}

// An uninstall lists only the kinds of the strategy accepted in force, and
// namespaced kinds only in the namespaces it wrote to and monitoring may be in
// (never cluster-wide). A ConfigMap nobody accepted, claiming the same ID,
// steers nothing: its namespace is not listed.
func TestUninstallListsOnlyTheStrategysKindsAndNamespaces(t *testing.T) {
	s := &strategy.Strategy{}
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt-handler", Namespace: "kubevirt"}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "auth-reader", Namespace: "kube-system"}},
		&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "kubevirts.kubevirt.io"}},
	} {
		if err := s.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &deployid.Config{Namespace: "kubevirt", KubeVirtVersion: "v1", Registry: "r"}
	cfg.ID = cfg.ComputeID()
	cm, err := strategy.Encode(s, cfg, "monitoring")
	if err != nil {
		t.Fatal(err)
	}
	cm.Namespace, cm.UID = "kubevirt", "genuine"
	planted := &strategy.Strategy{}
	if err := planted.Add(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "attacker-ns"}}); err != nil {
		t.Fatal(err)
	}
	plantedCM, err := strategy.Encode(planted, cfg, "attacker-ns")
	if err != nil {
		t.Fatal(err)
	}
	plantedCM.Name, plantedCM.Namespace, plantedCM.UID = "planted", "kubevirt", "planted"
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "kubevirts.kubevirt.io"}}
	crd.Labels = map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(crd, cm, plantedCM).Build()
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt"}}
	kv.Status.ObservedDeploymentID, kv.Status.ObservedDeploymentConfig = cfg.ID, cfg.JSON()
	kv.Status.InstallStrategies = []v1.InstallStrategyRef{{DeploymentID: cfg.ID, ConfigMap: cm.Name, UID: string(cm.UID), Digest: strategy.Digest(cm)}}
	var lists []string
	u := uninstaller(c, interceptor.NewClient(c, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			lo := (&client.ListOptions{}).ApplyOptions(opts)
			lists = append(lists, fmt.Sprintf("%T %s", list, lo.Namespace))
			return c.List(ctx, list, opts...)
		},
	}))
	// While the CRD remains, a pass lists only CRDs; once it is gone, the rest.
	for pass, want := range [][]string{
		{"*v1.CustomResourceDefinitionList "},
		{
			"*v1.CustomResourceDefinitionList ",
			"*v1.ServiceAccountList kubevirt",
			"*v1.RoleBindingList kubevirt", "*v1.RoleBindingList kube-system", "*v1.RoleBindingList monitoring", "*v1.RoleBindingList openshift-monitoring",
		},
	} {
		lists = nil
		if _, err := u.deleteEverything(context.Background(), kv); err != nil {
			t.Fatal(err)
		}
		if strings.Join(lists, "; ") != strings.Join(want, "; ") {
			t.Errorf("pass %d: lists\n  %s\nwant\n  %s", pass+1, strings.Join(lists, "\n  "), strings.Join(want, "\n  "))
		}
	}
}

// An uninstall group is deleted writeWorkers at a time: more than one delete
// is in flight, never more than writeWorkers; a refused delete does not stop
// the others and is named; a terminating object is not deleted again.
func TestDeleteAllDeletesConcurrently(t *testing.T) {
	var objs []client.Object
	for i := range 3 * deleteWorkers {
		objs = append(objs, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: fmt.Sprintf("sa-%02d", i)}})
	}
	terminating := metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	goingAlready := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "going", DeletionTimestamp: &terminating}}
	var (
		mu              sync.Mutex
		inFlight, most  int
		deleted         []string
		secondArrived   = make(chan struct{})
		closeSecondOnce sync.Once
	)
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			if inFlight >= 2 {
				closeSecondOnce.Do(func() { close(secondArrived) })
			}
			deleted = append(deleted, obj.GetName())
			mu.Unlock()
			select { // the first delete waits for a second one to be in flight
			case <-secondArrived:
			case <-time.After(10 * time.Second):
			}
			mu.Lock()
			inFlight--
			mu.Unlock()
			if obj.GetName() == "sa-03" {
				return fmt.Errorf("refused")
			}
			return c.Delete(ctx, obj, opts...)
		}}).Build()
	err := uninstaller(c, c).deleteAll(context.Background(), append(objs, goingAlready))
	if err == nil || !strings.Contains(err.Error(), "sa-03") || !strings.Contains(err.Error(), "refused") {
		t.Errorf("error %v, want the refused delete named", err)
	}
	if len(deleted) != len(objs) || slices.Contains(deleted, "going") {
		t.Errorf("deleted %d objects (%v), want each of the %d once and not the terminating one", len(deleted), deleted, len(objs))
	}
	if most < 2 || most > deleteWorkers {
		t.Errorf("at most %d deletes in flight, want 2 to %d", most, deleteWorkers)
	}
}
