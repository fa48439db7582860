package install_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
	"github.com/virt-operator/virt-operator/internal/sandbox/vmsim"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

const vmNamespace = "default"

// migrationLog follows every migration through a watch: how many were unfinished
// at once, and each VMI's migrations by outcome.
type migrationLog struct {
	mu          sync.Mutex
	unfinished  map[types.UID]bool
	maxParallel int
	perVMI      map[string]map[v1.VirtualMachineInstanceMigrationPhase]int
	created     map[types.UID]bool
	// createdAt and finishedAt are when the watch first showed each migration and
	// its end, for the timing breakdown.
	createdAt, finishedAt map[types.UID]time.Time
	// nodeOf is where each VMI ran before the upgrade (set by the test): a
	// migration leaves that node. maxPerNode is the most unfinished migrations
	// seen leaving one node at once.
	nodeOf     map[string]string
	sourceOf   map[types.UID]string
	maxPerNode int
	// createdTimes are each VMI's migrations' creationTimestamps (the API
	// server's, whole seconds), in order: unlike when the watch showed them,
	// they do not depend on how fast this test runs.
	createdTimes map[string][]time.Time
	stop         func()
}

func (e *env) followMigrations() *migrationLog {
	e.t.Helper()
	wc, err := client.NewWithWatch(e.sb.RESTConfig(), client.Options{Scheme: e.c.Scheme()})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &migrationLog{unfinished: map[types.UID]bool{}, created: map[types.UID]bool{},
		createdAt: map[types.UID]time.Time{}, finishedAt: map[types.UID]time.Time{},
		perVMI: map[string]map[v1.VirtualMachineInstanceMigrationPhase]int{}, createdTimes: map[string][]time.Time{}, sourceOf: map[types.UID]string{}}
	// An informer, not a bare watch: the API server ends a custom resource's
	// watches when its CRD changes, as the upgrade's new CRDs do, and a watch
	// resumed from the last resourceVersion is then refused as too old. The
	// informer lists again and goes on.
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := &v1.VirtualMachineInstanceMigrationList{}
			return list, wc.List(ctx, list, client.InNamespace(vmNamespace), &client.ListOptions{Raw: &opts})
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return wc.Watch(ctx, &v1.VirtualMachineInstanceMigrationList{}, client.InNamespace(vmNamespace), &client.ListOptions{Raw: &opts})
		},
	}
	migration := func(obj any) *v1.VirtualMachineInstanceMigration {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		m, _ := obj.(*v1.VirtualMachineInstanceMigration)
		return m
	}
	_, informer := toolscache.NewInformerWithOptions(toolscache.InformerOptions{
		ListerWatcher: lw, ObjectType: &v1.VirtualMachineInstanceMigration{},
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { l.record(watch.Added, migration(obj)) },
			UpdateFunc: func(_, obj any) { l.record(watch.Modified, migration(obj)) },
			DeleteFunc: func(obj any) {
				if m := migration(obj); m != nil {
					l.record(watch.Deleted, m)
				}
			},
		},
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		informer.RunWithContext(ctx)
	}()
	if !toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		e.t.Fatal("the migration informer did not sync")
	}
	l.stop = func() { cancel(); <-done }
	e.t.Cleanup(l.stop)
	return l
}

func (l *migrationLog) record(t watch.EventType, m *v1.VirtualMachineInstanceMigration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.created[m.UID] {
		l.created[m.UID] = true
		l.createdAt[m.UID] = time.Now()
		if l.perVMI[m.Spec.VMIName] == nil {
			l.perVMI[m.Spec.VMIName] = map[v1.VirtualMachineInstanceMigrationPhase]int{}
		}
		l.perVMI[m.Spec.VMIName]["created"]++
		l.createdTimes[m.Spec.VMIName] = append(l.createdTimes[m.Spec.VMIName], m.CreationTimestamp.Time)
	}
	switch {
	case t == watch.Deleted || core.IsFinished(m):
		if l.unfinished[m.UID] && core.IsFinished(m) {
			l.perVMI[m.Spec.VMIName][m.Status.Phase]++
			l.finishedAt[m.UID] = time.Now()
		}
		delete(l.unfinished, m.UID)
	default:
		if !l.unfinished[m.UID] {
			l.unfinished[m.UID] = true
			l.sourceOf[m.UID] = l.nodeOf[m.Spec.VMIName]
		}
	}
	l.maxParallel = max(l.maxParallel, len(l.unfinished))
	if l.nodeOf != nil {
		perNode := map[string]int{}
		for uid := range l.unfinished {
			perNode[l.sourceOf[uid]]++
		}
		for _, n := range perNode {
			l.maxPerNode = max(l.maxPerNode, n)
		}
	}
}

// setNodes records where each VMI runs before the migrations start.
func (l *migrationLog) setNodes(nodeOf map[string]string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nodeOf = nodeOf
}

func (l *migrationLog) perNodeMax() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.maxPerNode
}

// timing is the mean time a migration ran (first seen → finished) and the mean
// time from a migration's end to the creation of the next migration leaving the
// same node (the updater's reaction, simulator bookkeeping included).
func (l *migrationLog) timing() (run, react time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	startsByNode := map[string][]time.Time{}
	for uid, t := range l.createdAt {
		startsByNode[l.sourceOf[uid]] = append(startsByNode[l.sourceOf[uid]], t)
	}
	for _, starts := range startsByNode {
		sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	}
	n := 0
	for uid, end := range l.finishedAt {
		run += end.Sub(l.createdAt[uid])
		starts := startsByNode[l.sourceOf[uid]]
		if k := sort.Search(len(starts), func(i int) bool { return starts[i].After(end) }); k < len(starts) {
			react += starts[k].Sub(end)
			n++
		}
	}
	if len(l.finishedAt) > 0 {
		run /= time.Duration(len(l.finishedAt))
	}
	if n > 0 {
		react /= time.Duration(n)
	}
	return run, react
}

func (l *migrationLog) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.created)
}

// followBatchTimes follows the KubeVirt CR through an informer (it survives
// the upgrade's CRD changes, which end plain watches) and returns what it saw
// so far: each distinct status.workloadUpdates.lastEvictionBatch, in order. The
// informer may miss a value across a relist; a missed batch time only widens
// the gap between the ones around it.
func (e *env) followBatchTimes() func() []time.Time {
	e.t.Helper()
	wc, err := client.NewWithWatch(e.sb.RESTConfig(), client.Options{Scheme: e.c.Scheme()})
	if err != nil {
		e.t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		times []time.Time
	)
	see := func(obj any) {
		kv, ok := obj.(*v1.KubeVirt)
		if !ok || kv.Status.WorkloadUpdates == nil || kv.Status.WorkloadUpdates.LastEvictionBatch == nil {
			return
		}
		at := kv.Status.WorkloadUpdates.LastEvictionBatch.Time
		mu.Lock()
		defer mu.Unlock()
		if n := len(times); n == 0 || !times[n-1].Equal(at) {
			times = append(times, at)
		}
	}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := &v1.KubeVirtList{}
			return list, wc.List(ctx, list, client.InNamespace(namespace), &client.ListOptions{Raw: &opts})
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return wc.Watch(ctx, &v1.KubeVirtList{}, client.InNamespace(namespace), &client.ListOptions{Raw: &opts})
		},
	}
	_, informer := toolscache.NewInformerWithOptions(toolscache.InformerOptions{
		ListerWatcher: lw, ObjectType: &v1.KubeVirt{},
		Handler: toolscache.ResourceEventHandlerFuncs{
			AddFunc:    see,
			UpdateFunc: func(_, obj any) { see(obj) },
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		informer.RunWithContext(ctx)
	}()
	e.t.Cleanup(func() { cancel(); <-done })
	if !toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		e.t.Fatal("the KubeVirt informer did not sync")
	}
	return func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Time(nil), times...)
	}
}

// evictionTimes are the times of the SuccessfulEvict Events, in order.
func (e *env) evictionTimes() []time.Time {
	e.t.Helper()
	list := &eventsv1.EventList{}
	if err := e.c.List(context.Background(), list, client.InNamespace(vmNamespace)); err != nil {
		e.t.Fatal(err)
	}
	var times []time.Time
	for _, ev := range list.Items {
		if ev.Reason == core.ReasonSuccessfulEvict {
			times = append(times, ev.EventTime.Time)
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
	return times
}

// evictionBatches groups the SuccessfulEvict Events by time, for the log: on a
// busy machine a late batch's Events can run into the next batch's.
func (e *env) evictionBatches(gap time.Duration) [][]time.Time {
	e.t.Helper()
	times := e.evictionTimes()
	var batches [][]time.Time
	for i, t := range times {
		if i == 0 || t.Sub(times[i-1]) > gap {
			batches = append(batches, nil)
		}
		batches[len(batches)-1] = append(batches[len(batches)-1], t)
	}
	return batches
}

// eventsIn counts the Events of a reason in a namespace.
func (e *env) eventsIn(namespace, reason string) int {
	list := &eventsv1.EventList{}
	if err := e.c.List(context.Background(), list, client.InNamespace(namespace)); err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, ev := range list.Items {
		if ev.Reason == reason {
			n++
		}
	}
	return n
}

func launcherImage(kv *v1.KubeVirt) string {
	cfg, err := deployid.Parse(kv.Status.TargetDeploymentConfig)
	if err != nil {
		panic(err)
	}
	return cfg.Image(deployid.Launcher)
}

// outdated is the operator's count (status.outdatedVirtualMachineInstanceWorkloads
// is virt-controller's, which the VM simulator plays).
func outdated(kv *v1.KubeVirt) int {
	if kv.Status.WorkloadUpdates == nil {
		return -1
	}
	return kv.Status.WorkloadUpdates.Outdated
}

// runVMs creates the VMs o describes (in vmNamespace unless it names one) and
// waits until each runs on the launcher image; it returns the VM simulator's
// client and the VMs' names.
func (e *env) runVMs(o vmsim.CreateOptions, image string) (client.Client, []string) {
	e.t.Helper()
	if o.Namespace == "" {
		o.Namespace = vmNamespace
	}
	vc, err := vmsim.NewClient(e.sb.RESTConfig())
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	names, err := vmsim.CreateVMs(ctx, vc, o)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := vmsim.WaitRunning(ctx, vc, o.Namespace, names, image); err != nil {
		e.t.Fatal(err)
	}
	return vc, names
}

// vmiNodes is where each VMI in the namespace runs now, and how many run on
// the busiest node.
func (e *env) vmiNodes() (nodeOf map[string]string, busiest int) {
	e.t.Helper()
	var vmis v1.VirtualMachineInstanceList
	if err := e.c.List(context.Background(), &vmis, client.InNamespace(vmNamespace)); err != nil {
		e.t.Fatal(err)
	}
	nodeOf = map[string]string{}
	count := map[string]int{}
	for _, vmi := range vmis.Items {
		nodeOf[vmi.Name] = vmi.Status.NodeName
		count[vmi.Status.NodeName]++
		busiest = max(busiest, count[vmi.Status.NodeName])
	}
	return nodeOf, busiest
}

// 200 VMs (150 live-migratable, 50 not) outdated by an upgrade, moved by the
// operator's updater: nothing moves while the upgrade runs; then at most one
// migration out of each node at a time, evictions in batches of ten per interval,
// two VMIs whose first migration fails are retried after their backoff, the
// operator is killed and restarted half-way, and the count drains to zero with no
// VMI migrated twice.
func TestWorkloadUpdatesAfterUpgrade(t *testing.T) {
	t.Parallel()
	const (
		vms, nonMigratable = 200, 50
		interval           = 3 * time.Second
	)
	e := startEnv(t, 10, sandboxtest.WithMigrationDuration(500*time.Millisecond))
	e.createKubeVirt(v1.KubeVirtSpec{
		WorkloadUpdates: &v1.WorkloadUpdatePolicy{
			Methods:               []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate, v1.WorkloadUpdateMethodEvict},
			BatchEvictionInterval: &v1.Duration{Duration: interval},
			RetryBackoff:          &v1.Duration{Duration: time.Second},
		},
		HandlerRollout: &v1.HandlerRolloutPolicy{BakeTime: &v1.Duration{Duration: 2 * time.Second}},
	})
	oldImage := launcherImage(e.waitAvailable(3 * time.Minute))

	_, names := e.runVMs(vmsim.CreateOptions{Count: vms, NonMigratable: nonMigratable}, oldImage)
	ctx := context.Background()
	flaky := names[:2] // migratable: the non-migratable ones are last
	for _, name := range flaky {
		vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: vmNamespace}}
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+vmsim.FailMigrationsAnnotation+`":"1"}}}`))
		if err := e.c.Patch(ctx, vmi, patch); err != nil {
			t.Fatal(err)
		}
	}
	e.eventually("200 VMIs up to date before the upgrade", time.Minute, func() (bool, error) {
		return outdated(e.kubeVirt()) == 0, nil
	})

	migs := e.followMigrations()
	batchTimes := e.followBatchTimes()
	nodeOf, _ := e.vmiNodes()
	migs.setNodes(nodeOf)
	nodes := map[string]bool{}
	for _, n := range nodeOf {
		nodes[n] = true
	}
	e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0" })
	e.eventually("the upgrade done (observed == target)", 5*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		if kv.Status.ObservedDeploymentID != kv.Status.TargetDeploymentID || kv.Status.Phase != v1.KubeVirtPhaseDeployed {
			if n := migs.total(); n > 0 {
				return false, fmt.Errorf("%d migrations created while the upgrade ran", n)
			}
			return false, nil
		}
		return launcherImage(kv) != oldImage, nil
	})

	e.eventually("a third of the migrations", 3*time.Minute, func() (bool, error) { return migs.total() >= 50, nil })
	e.stopOperator() // a restart mid-way must not duplicate anything
	e.startOperator()

	e.eventually("outdated count 0", 5*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		return outdated(kv) == 0 && kv.Status.WorkloadUpdates != nil && kv.Status.WorkloadUpdates.MigrationsInFlight == 0, nil
	})
	migs.stop()

	if migs.maxParallel > len(nodes) {
		t.Errorf("%d migrations ran at once, cap %d (the nodes running outdated VMIs)", migs.maxParallel, len(nodes))
	}
	if n := migs.perNodeMax(); n > core.DefaultMaxMigrationsPerNode {
		t.Errorf("%d migrations left one node at once, cap %d", n, core.DefaultMaxMigrationsPerNode)
	}
	for vmi, by := range migs.perVMI {
		wantCreated := 1
		if vmi == flaky[0] || vmi == flaky[1] {
			wantCreated = 2
			if by[v1.MigrationFailed] != 1 {
				t.Errorf("%s: %d failed migrations, want 1 (the marker)", vmi, by[v1.MigrationFailed])
			}
		}
		if by["created"] != wantCreated || by[v1.MigrationSucceeded] != 1 {
			t.Errorf("%s: %d migrations created, %d succeeded; want %d and 1", vmi, by["created"], by[v1.MigrationSucceeded], wantCreated)
		}
	}
	if len(migs.perVMI) != vms-nonMigratable {
		t.Errorf("%d VMIs migrated, want %d", len(migs.perVMI), vms-nonMigratable)
	}
	// The recorder writes Events after the fact, and a loaded API server has
	// written the second one after the drain ended.
	e.eventually("a FailedMigration event per failed migration (2)", time.Minute, func() (bool, error) {
		return e.eventsIn(vmNamespace, core.ReasonFailedMigration) >= 2, nil
	})
	// The interval, on the objects' own times rather than on when this test saw
	// a batch. status.workloadUpdates.lastEvictionBatch is written before a
	// batch's evictions, rounded up to the second, and a restarted operator plans
	// from it: with a whole-second interval, consecutive recorded batch times are
	// at least the interval apart, also across the restart.
	times := batchTimes()
	if len(times) < 2 { // five batches or more; the informer may miss one across a relist
		t.Errorf("%d eviction batch times recorded (%v), want several", len(times), times)
	}
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < interval {
			t.Errorf("eviction batch %d recorded %s after the previous one, interval %s (batch times %v)", i, gap, interval, times)
		}
	}
	// The Events agree, however late they are: a batch recorded at L was decided
	// after L - 1 s and evicts after that, earlier batches' evictions came before
	// it, and the next batch comes an interval later; so the evictions Evented
	// in [L, L - 1 s + interval) are that batch's alone, at most a batch's size.
	evictions := e.evictionTimes()
	for _, at := range times {
		n := 0
		for _, ev := range evictions {
			if !ev.Before(at) && ev.Before(at.Add(interval-time.Second)) {
				n++
			}
		}
		if n > core.DefaultBatchEvictionSize {
			t.Errorf("%d evictions Evented in the %s after the batch recorded at %s, limit %d", n, interval-time.Second, at, core.DefaultBatchEvictionSize)
		}
	}
	batches := e.evictionBatches(interval / 2)
	evicted := len(evictions)
	// Events still buffered when the operator was stopped may be lost, and so may
	// the count of a batch the stop cut short: every VMI on the new launcher (below)
	// is what proves they were all moved.
	if w := e.kubeVirt().Status.WorkloadUpdates; w == nil || w.Evicted > nonMigratable || evicted > nonMigratable || w.Evicted < nonMigratable-core.DefaultBatchEvictionSize {
		t.Errorf("status.workloadUpdates %+v, %d SuccessfulEvict events; want %d evicted", w, evicted, nonMigratable)
	}
	var vmis v1.VirtualMachineInstanceList
	if err := e.c.List(ctx, &vmis, client.InNamespace(vmNamespace)); err != nil {
		t.Fatal(err)
	}
	newImage := launcherImage(e.kubeVirt())
	for _, vmi := range vmis.Items {
		if vmi.Status.LauncherContainerImageVersion != newImage {
			t.Errorf("%s still runs %s", vmi.Name, vmi.Status.LauncherContainerImageVersion)
		}
	}
	sizes := make([]int, len(batches))
	for i, b := range batches {
		sizes[i] = len(b)
	}
	t.Logf("%d migrations (at most %d at once); %d evictions in batches of %v (by Event time), batch times %v; status %+v",
		migs.total(), migs.maxParallel, evicted, sizes, times, e.kubeVirt().Status.WorkloadUpdates)
}
