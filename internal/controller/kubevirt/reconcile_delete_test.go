package kubevirt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"

	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/uninstall"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

// deletingEnv is a KubeVirt CR being deleted, a managed Deployment, and a
// managed CRD, through the fake client.
type deletingEnv struct {
	c   client.Client
	r   *Reconciler
	now time.Time
}

func newDeletingEnv(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, extra ...client.Object) *deletingEnv {
	t.Helper()
	scheme := testScheme(t)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	deleting := metav1.NewTime(now.Add(-time.Minute))
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt",
		Finalizers: []string{metadata.KubeVirtFinalizer}, DeletionTimestamp: &deleting},
		Status: v1.KubeVirtStatus{Phase: v1.KubeVirtPhaseDeployed}}
	managed := map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-api", Labels: managed}}
	crd.Labels = managed
	c := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(testrestmapper.TestOnlyStaticRESTMapper(scheme)).
		WithObjects(append([]client.Object{kv, dep, crd}, extra...)...).WithStatusSubresource(&v1.KubeVirt{}).Build()
	return &deletingEnv{c: c, now: now, r: &Reconciler{Client: c, APIReader: c, Namespace: "kubevirt", Clock: clocktesting.NewFakePassiveClock(now)}}
}

func (e *deletingEnv) reconcile(t *testing.T) *v1.KubeVirt {
	t.Helper()
	key := types.NamespacedName{Namespace: "kubevirt", Name: "kubevirt"}
	if _, err := e.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	kv := &v1.KubeVirt{}
	if err := e.c.Get(context.Background(), key, kv); err != nil {
		t.Fatal(err)
	}
	return kv
}

func (e *deletingEnv) exists(t *testing.T, obj client.Object) bool {
	t.Helper()
	err := e.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	return err == nil
}

func TestUninstallRetriesACRDTheAPIServerGaveUpOn(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	deleting := metav1.NewTime(now.Add(-time.Minute))
	stuck := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "plugins.plugin.kubevirt.io", DeletionTimestamp: &deleting,
			Finalizers: []string{apiextensionsv1.CustomResourceCleanupFinalizer}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{{
			Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: "InstanceDeletionFailed",
			Message: "could not list instances: storage is (re)initializing", LastTransitionTime: deleting,
		}}},
	}
	e := newDeletingEnv(t, stuck)
	kv := e.reconcile(t)

	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: stuck.Name}}
	if !e.exists(t, crd) || crd.Annotations[uninstall.CRDCleanupRetryAnnotation] != e.now.Format(time.RFC3339) {
		t.Errorf("the stuck CRD was not touched: annotations %v", crd.Annotations)
	}
	if !e.exists(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-api"}}) {
		t.Error("virt-api was deleted while a CRD still stood: the components must outlive the CRDs' instances")
	}
	c := findCondition(kv.Status.Conditions, v1.KubeVirtConditionAvailable)
	if kv.Status.Phase != v1.KubeVirtPhaseDeleting || c == nil || !strings.Contains(c.Message, "plugins.plugin.kubevirt.io: could not list instances") {
		t.Errorf("phase %s, condition %+v: want Deleting, naming the CRD and the API server's reason", kv.Status.Phase, c)
	}
}

func vmiCRD() *apiextensionsv1.CustomResourceDefinition {
	return userCRD(schema.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstance"}, "virtualmachineinstances", apiextensionsv1.NamespaceScoped, nil)
}

func TestUninstallHeldByWorkloadsDeletesNothing(t *testing.T) {
	crd := vmiCRD()
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vmi-1"}}
	e := newDeletingEnv(t, crd, vmi)
	kv := e.reconcile(t)

	if !e.exists(t, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crd.Name}}) ||
		!e.exists(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-api"}}) {
		t.Fatal("an uninstall held by a VMI deleted something")
	}
	c := findCondition(kv.Status.Conditions, v1.KubeVirtConditionSynchronized)
	if c == nil || c.Reason != ReasonDeletionBlocked || !strings.Contains(c.Message, "1 VirtualMachineInstances") {
		t.Errorf("Synchronized = %+v, want DeletionBlocked with the VMI count", c)
	}
	if !e.exists(t, kv) || len(kv.Finalizers) == 0 {
		t.Error("the finalizer went while the uninstall is held")
	}
}

// forbiddenCounts makes the lists of user objects (metadata lists of the
// kubevirt.io group) forbidden, as the RBAC does for a delegated release's new
// kind, and records whether any was asked for.
func forbiddenCounts(e *deletingEnv, asked *bool) {
	e.r.APIReader = interceptor.NewClient(e.c.(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*metav1.PartialObjectMetadataList); ok && list.GetObjectKind().GroupVersionKind().Group == "kubevirt.io" {
				*asked = true
				return apierrors.NewForbidden(schema.GroupResource{Group: "kubevirt.io", Resource: "virtualmachineinstances"}, "", errors.New("no list"))
			}
			return c.List(ctx, list, opts...)
		},
	})
}

// Under BlockUninstallIfWorkloadsExist, a kind that cannot be counted holds
// the uninstall as objects would, naming the kind, why, and the override.
func TestUninstallHeldByAKindThatCannotBeCounted(t *testing.T) {
	e := newDeletingEnv(t, vmiCRD())
	asked := false
	forbiddenCounts(e, &asked)
	kv := e.reconcile(t)
	if !e.exists(t, vmiCRD()) {
		t.Fatal("an uninstall whose workloads cannot be counted deleted a CRD")
	}
	c := findCondition(kv.Status.Conditions, v1.KubeVirtConditionSynchronized)
	if c == nil || c.Reason != ReasonDeletionBlocked || !strings.Contains(c.Message, "VirtualMachineInstances: cannot be counted: forbidden") ||
		!strings.Contains(c.Message, "RemoveWorkloads") {
		t.Errorf("Synchronized = %+v, want DeletionBlocked naming the kind, why, and RemoveWorkloads", c)
	}
}

// An uninstall the count does not decide (RemoveWorkloads, or a KubeVirt
// never Deployed) counts nothing: a kind the RBAC forbids to count blocks
// none of them.
func TestUninstallTheCountDoesNotDecideCountsNothing(t *testing.T) {
	for name, edit := range map[string]func(*v1.KubeVirt){
		"RemoveWorkloads": func(kv *v1.KubeVirt) { kv.Spec.UninstallStrategy = v1.UninstallStrategyRemoveWorkloads },
		"never Deployed":  func(kv *v1.KubeVirt) { kv.Status.Phase = v1.KubeVirtPhaseDeploying },
	} {
		t.Run(name, func(t *testing.T) {
			e := newDeletingEnv(t, vmiCRD())
			kv := &v1.KubeVirt{}
			if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: "kubevirt", Name: "kubevirt"}, kv); err != nil {
				t.Fatal(err)
			}
			edit(kv)
			if err := e.c.Update(context.Background(), kv); err != nil {
				t.Fatal(err)
			}
			edit(kv) // the update's answer carries the stored status
			if err := e.c.Status().Update(context.Background(), kv); err != nil {
				t.Fatal(err)
			}
			asked := false
			forbiddenCounts(e, &asked)
			kv = e.reconcile(t)
			if asked || e.exists(t, vmiCRD()) || kv.Status.Phase != v1.KubeVirtPhaseDeleting {
				t.Fatalf("counted %v, CRD left %v, phase %s: want no count, the CRDs deleted, Deleting", asked, e.exists(t, vmiCRD()), kv.Status.Phase)
			}
		})
	}
}

// Adding the finalizer mid-pass must not replace the status computed so far
// with the stored one (the patch response carries the stored status).
func TestEnsureFinalizerKeepsTheStatusOfThisPass(t *testing.T) {
	scheme := testScheme(t)
	stored := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt"},
		Status: v1.KubeVirtStatus{TargetDeploymentID: "old"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).WithStatusSubresource(&v1.KubeVirt{}).Build()
	r := &Reconciler{Client: c}
	kv := &v1.KubeVirt{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(stored), kv); err != nil {
		t.Fatal(err)
	}
	kv.Status.TargetDeploymentID = "new"
	if err := r.ensureFinalizer(context.Background(), kv); err != nil {
		t.Fatal(err)
	}
	if kv.Status.TargetDeploymentID != "new" {
		t.Fatalf("the in-memory target went back to %q", kv.Status.TargetDeploymentID)
	}
	got := &v1.KubeVirt{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(stored), got); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(got.Finalizers, ","), metadata.KubeVirtFinalizer) || got.ResourceVersion != kv.ResourceVersion {
		t.Fatalf("stored finalizers %v (resourceVersion %s, in memory %s)", got.Finalizers, got.ResourceVersion, kv.ResourceVersion)
	}
	// A stale copy conflicts instead of being merged over a concurrent edit.
	stale := kv.DeepCopy()
	stale.ResourceVersion, stale.Finalizers = "1", nil
	if err := r.ensureFinalizer(context.Background(), stale); err == nil {
		t.Fatal("a finalizer patch from a stale copy went through")
	}
}

func TestUninstallPollBacksOff(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		waited time.Duration
		want   time.Duration
	}{
		{0, time.Second}, {500 * time.Millisecond, time.Second}, {4 * time.Second, 4 * time.Second},
		{25 * time.Second, 25 * time.Second}, {time.Hour, uninstall.BlockedPollMax},
	} {
		if got := uninstall.HeldPoll(start, start.Add(tc.waited)); got != tc.want {
			t.Errorf("waited %v: poll after %v, want %v", tc.waited, got, tc.want)
		}
	}
}

// A held uninstall counts the workloads with lists of one item, and looks
// again later the longer it has been held.
func TestHeldUninstallPollsWithBackoffAndLimitedLists(t *testing.T) {
	crd := vmiCRD()
	vmis := []client.Object{
		&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vmi-1"}},
		&v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vmi-2"}},
	}
	e := newDeletingEnv(t, crd, vmis...)
	var unlimited []string
	e.r.APIReader = interceptor.NewClient(e.c.(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if lo := (&client.ListOptions{}).ApplyOptions(opts); lo.Limit != 1 {
				unlimited = append(unlimited, fmt.Sprintf("%T", list))
			}
			return c.List(ctx, list, opts...)
		},
	})
	key := types.NamespacedName{Namespace: "kubevirt", Name: "kubevirt"}
	var polls []time.Duration
	for _, heldFor := range []time.Duration{0, 3 * time.Second, 10 * time.Minute} {
		e.r.Clock = clocktesting.NewFakePassiveClock(e.now.Add(heldFor))
		res, err := e.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
		if err != nil {
			t.Fatal(err)
		}
		polls = append(polls, res.RequeueAfter)
	}
	if polls[0] != time.Second || polls[1] != 3*time.Second || polls[2] != uninstall.BlockedPollMax {
		t.Errorf("polls %v, want 1s, 3s, then %v", polls, uninstall.BlockedPollMax)
	}
	if len(unlimited) > 0 {
		t.Errorf("a held uninstall listed without a limit: %v", unlimited)
	}
}
