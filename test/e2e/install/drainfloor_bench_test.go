package install_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/sandbox/vmsim"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// floorLabel marks the minimal driver's migrations, so they are deleted after.
const floorLabel = "bench.virt-operator.io/drain-floor"

// drainFloor is the drain's floor: every VMI in vmNamespace migrated once by
// a minimal driver with the operator's default pacing (at most one migration
// out of each node at a time, no cluster cap) and nothing else (no status, no
// Events, no backoff): a node's next migration is created as soon as its watch
// shows the last one finished. It returns how long that took and the busiest
// node's VMI count at the start (the floor's own bound is that many migration
// durations), then deletes its migrations. Each VMI goes to the next node by
// name (vmsim.TargetNodeAnnotation, honoured for lean VMs), so every node ends
// with the VMIs its predecessor had: the drain that follows starts from a
// spread with the same busiest node's count, and the two drains compare whole.
// (With full pods the simulator picks the targets, and the spread changes.)
func (e *env) drainFloor(b testing.TB) (took time.Duration, busiest int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	nodeOf, busiest := e.vmiNodes()
	byNode := map[string][]string{}
	for vmi, node := range nodeOf {
		byNode[node] = append(byNode[node], vmi)
	}
	next := e.nextNodes(b)
	finished := e.watchFloorMigrations(ctx, b)
	// The sandbox's config has client-go's 5 QPS, which would pace the floor
	// (the scale scenario starts up to a hundred migrations a second).
	cfg := e.sb.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 1000
	c, err := client.New(cfg, client.Options{Scheme: e.c.Scheme()})
	if err != nil {
		b.Fatal(err)
	}

	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(byNode))
	for _, vmis := range byNode {
		wg.Go(func() {
			for _, vmi := range vmis {
				done := finished.await("floor-" + vmi)
				m := &v1.VirtualMachineInstanceMigration{
					ObjectMeta: metav1.ObjectMeta{Namespace: vmNamespace, Name: "floor-" + vmi, Labels: map[string]string{floorLabel: "true"},
						Annotations: map[string]string{vmsim.TargetNodeAnnotation: next[nodeOf[vmi]]}},
					Spec: v1.VirtualMachineInstanceMigrationSpec{VMIName: vmi},
				}
				if err := c.Create(ctx, m); err != nil {
					errs <- err
					return
				}
				select {
				case <-done:
				case <-ctx.Done():
					errs <- ctx.Err()
					return
				}
			}
		})
	}
	wg.Wait()
	took = time.Since(start)
	close(errs)
	for err := range errs {
		b.Fatalf("the drain floor: %v", err)
	}
	if n := finished.failed(); n > 0 {
		b.Logf("the drain floor: %d of %d migrations failed", n, len(nodeOf))
	}
	if err := e.c.DeleteAllOf(context.Background(), &v1.VirtualMachineInstanceMigration{}, client.InNamespace(vmNamespace),
		client.MatchingLabels{floorLabel: "true"}); err != nil {
		b.Fatal(err)
	}
	return took, busiest
}

// nextNodes maps each node to the next by name, the last to the first: a
// permutation, so VMIs moved along it keep their count per node.
func (e *env) nextNodes(b testing.TB) map[string]string {
	b.Helper()
	var nodes corev1.NodeList
	if err := e.c.List(context.Background(), &nodes); err != nil {
		b.Fatal(err)
	}
	names := make([]string, len(nodes.Items))
	for i, n := range nodes.Items {
		names[i] = n.Name
	}
	return nextOf(names)
}

// nextOf maps each name to the next in sorted order, the last to the first.
func nextOf(names []string) map[string]string {
	sorted := slices.Sorted(slices.Values(names))
	next := make(map[string]string, len(sorted))
	for i, n := range sorted {
		next[n] = sorted[(i+1)%len(sorted)]
	}
	return next
}

// floorFinished closes a migration's channel once it has finished.
type floorFinished struct {
	mu       sync.Mutex
	waiting  map[string]chan struct{}
	finished map[string]bool
	failures int
}

// await returns a channel closed when the named migration finishes; call it
// before creating the migration.
func (f *floorFinished) await(name string) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan struct{})
	if f.finished[name] {
		close(ch)
	} else {
		f.waiting[name] = ch
	}
	return ch
}

func (f *floorFinished) observe(obj any) {
	m, ok := obj.(*v1.VirtualMachineInstanceMigration)
	if !ok || !core.IsFinished(m) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.finished[m.Name] {
		return
	}
	f.finished[m.Name] = true
	if m.Status.Phase == v1.MigrationFailed {
		f.failures++
	}
	if ch, ok := f.waiting[m.Name]; ok {
		close(ch)
		delete(f.waiting, m.Name)
	}
}

func (f *floorFinished) failed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failures
}

// watchFloorMigrations follows the driver's migrations through an informer
// until ctx ends (an informer lists again if the API server ends its watch).
func (e *env) watchFloorMigrations(ctx context.Context, b testing.TB) *floorFinished {
	wc, err := client.NewWithWatch(e.sb.RESTConfig(), client.Options{Scheme: e.c.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	f := &floorFinished{waiting: map[string]chan struct{}{}, finished: map[string]bool{}}
	selector := client.MatchingLabels{floorLabel: "true"}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := &v1.VirtualMachineInstanceMigrationList{}
			return list, wc.List(ctx, list, client.InNamespace(vmNamespace), selector, &client.ListOptions{Raw: &opts})
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return wc.Watch(ctx, &v1.VirtualMachineInstanceMigrationList{}, client.InNamespace(vmNamespace), selector, &client.ListOptions{Raw: &opts})
		},
	}
	_, informer := toolscache.NewInformerWithOptions(toolscache.InformerOptions{
		ListerWatcher: lw, ObjectType: &v1.VirtualMachineInstanceMigration{},
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc:    f.observe,
			UpdateFunc: func(_, obj any) { f.observe(obj) },
		},
	})
	go informer.RunWithContext(ctx)
	if !toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		b.Fatal("the drain floor's migration informer did not sync")
	}
	return f
}

// drainFloorRatio compares a drain with the floor's, each per VMI of its
// busiest node (the number of migrations one after another that bound it).
func drainFloorRatio(drain time.Duration, busiest int, floor time.Duration, floorBusiest int) float64 {
	if busiest == 0 || floorBusiest == 0 || floor <= 0 {
		return 0
	}
	return (drain.Seconds() / float64(busiest)) / (floor.Seconds() / float64(floorBusiest))
}
