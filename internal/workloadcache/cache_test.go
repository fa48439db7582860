package workloadcache

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

func scheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// mapper serves the workload kinds once served is called.
type mapper struct {
	meta.RESTMapper
	mu     sync.Mutex
	served bool
}

func newMapper() *mapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, kind := range []string{"VirtualMachineInstance", "VirtualMachineInstanceMigration"} {
		m.Add(v1.GroupVersion.WithKind(kind), meta.RESTScopeNamespace)
	}
	return &mapper{RESTMapper: m}
}

func (m *mapper) serve() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.served = true
}

func (m *mapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.served {
		return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}

func vmi(name, node string) *v1.VirtualMachineInstance {
	return &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "vms", Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{"kubevirt.io/vm": name}, Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
		Spec: runtime.RawExtension{Raw: []byte(`{"domain":{"devices":{}}}`)},
		Status: v1.VirtualMachineInstanceStatus{Phase: v1.VMIRunning, NodeName: node, LauncherContainerImageVersion: "launcher:v1",
			Conditions: []v1.VirtualMachineInstanceCondition{{Type: v1.VMIConditionLiveMigratable, Status: corev1.ConditionTrue, Message: "long"}}},
	}
}

func migration(name, vmiName string, phase v1.VirtualMachineInstanceMigrationPhase) *v1.VirtualMachineInstanceMigration {
	return &v1.VirtualMachineInstanceMigration{ObjectMeta: metav1.ObjectMeta{Namespace: "vms", Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.VirtualMachineInstanceMigrationSpec{VMIName: vmiName}, Status: v1.VirtualMachineInstanceMigrationStatus{Phase: phase}}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The cache starts once its kinds are served, holds every VMI and migration
// in its compact form, indexes the migrations by VMI and by whether they
// finished, and announces changes in the compact forms.
func TestCache(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(vmi("a", "n1"), vmi("b", "n2"),
		migration("m1", "a", v1.MigrationRunning), migration("m2", "a", v1.MigrationSucceeded), migration("m3", "b", v1.MigrationFailed)).Build()
	m := newMapper()
	wc := newCache(fakeClient{c}, m, logr.Discard(), 10*time.Millisecond)
	var mu sync.Mutex
	var seen []string
	wc.OnVMI(func(o, n *core.VMI) { // registered before the kind is served
		mu.Lock()
		defer mu.Unlock()
		switch {
		case o == nil:
			seen = append(seen, "added "+n.Name)
		case n == nil:
			seen = append(seen, "deleted "+o.Name)
		default:
			seen = append(seen, fmt.Sprintf("updated %s %s→%s", n.Name, o.Node, n.Node))
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = wc.Start(ctx) }()
	time.Sleep(50 * time.Millisecond)
	if wc.Synced() || len(wc.VMIs()) != 0 {
		t.Fatal("synced, or holding VMIs, before the kinds are served")
	}
	m.serve()
	eventually(t, "synced", wc.Synced)

	if n := len(wc.VMIs()); n != 2 {
		t.Fatalf("%d VMIs, want 2", n)
	}
	a := wc.VMI(core.Key{Namespace: "vms", Name: "a"})
	if a == nil || a.Node != "n1" || !a.Has(core.LiveMigratable) || a.Launcher != "launcher:v1" || a.Placement != nil {
		t.Fatalf("VMI a: %+v", a)
	}
	ms := wc.Migrations()
	if len(ms.Unfinished) != 1 || ms.Unfinished[0].Name != "m1" {
		t.Fatalf("unfinished %v, want m1", ms.Unfinished)
	}
	if f := ms.Finished(core.Key{Namespace: "vms", Name: "a"}); len(f) != 1 || f[0].Name != "m2" {
		t.Fatalf("a's finished %v, want m2", f)
	}
	if got := wc.Migration("vms", "m3"); got == nil || got.Phase != v1.MigrationFailed {
		t.Fatalf("m3: %+v", got)
	}
	if n := len(wc.AllMigrations()); n != 3 {
		t.Fatalf("%d migrations, want 3", n)
	}

	moved := &v1.VirtualMachineInstance{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "vms", Name: "a"}, moved); err != nil {
		t.Fatal(err)
	}
	moved.Status.NodeName = "n3"
	if err := c.Update(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, vmi("b", "n2")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the update and the deletion announced", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprint(seen) == "[added a added b updated a n1→n3 deleted b]" ||
			fmt.Sprint(seen) == "[added b added a updated a n1→n3 deleted b]"
	})
	if a := wc.VMI(core.Key{Namespace: "vms", Name: "a"}); a.Node != "n3" {
		t.Fatalf("a after its update: %+v", a)
	}
}

// A Reader answers as the cache does, from the client, at each call.
func TestReader(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(vmi("a", "n1"), migration("m1", "a", v1.MigrationRunning)).Build()
	r := Reader{Client: c}
	if !r.Synced() || len(r.VMIs()) != 1 || r.VMI(core.Key{Namespace: "vms", Name: "a"}).Node != "n1" ||
		len(r.Migrations().Unfinished) != 1 || r.Migration("vms", "m1") == nil || r.Migration("vms", "nope") != nil {
		t.Fatal("the reader does not answer as the cache")
	}
	if err := c.Delete(context.Background(), &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "vms", Name: "a"}}); err != nil {
		t.Fatal(err)
	}
	if len(r.VMIs()) != 0 {
		t.Fatal("a reader holds what it read")
	}
}

// fakeClient is the fake client, which streams no watch-list (the reflector
// then lists and watches).
type fakeClient struct{ client.WithWatch }

func (fakeClient) IsWatchListSemanticsUnSupported() bool { return true }
