package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/controller/eventrecorder"
	"github.com/virt-operator/virt-operator/internal/controller/workloadupdate"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/operator"
	core "github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// These tests run the workload updater alone against a real API server: the test
// plays the KubeVirt reconciler (status) and virt-controller (migration phases).
// They share the cluster's VMIs, so they do not run in parallel.

const (
	oldLauncher = "quay.io/kubevirt/virt-launcher:v1"
	wuNamespace = "vms"
)

type updaterHarness struct {
	t      *testing.T
	ctx    context.Context
	kv     *v1.KubeVirt
	newImg string
	stop   func()
}

func newUpdaterHarness(t *testing.T, policy *v1.WorkloadUpdatePolicy) *updaterHarness {
	return newUpdaterHarnessFor(t, v1.KubeVirtSpec{WorkloadUpdates: policy})
}

func newUpdaterHarnessFor(t *testing.T, spec v1.KubeVirtSpec) *updaterHarness {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns := createNamespace(t, ctx, "wu-operator")
	cfg := &deployid.Config{Namespace: ns, Registry: "quay.io/kubevirt", KubeVirtVersion: "v2"}
	cfg.ID = cfg.ComputeID()
	h := &updaterHarness{t: t, ctx: ctx, newImg: cfg.Image(deployid.Launcher)}
	h.kv = &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: ns},
		Spec: spec}
	must(t, k8s.Create(ctx, h.kv))
	h.kv.Status = v1.KubeVirtStatus{Phase: v1.KubeVirtPhaseDeployed,
		TargetDeploymentConfig: cfg.JSON(), TargetDeploymentID: cfg.ID, ObservedDeploymentID: "the-old-one"}
	must(t, k8s.Status().Update(ctx, h.kv))
	if err := k8s.Get(ctx, client.ObjectKey{Name: wuNamespace}, &corev1.Namespace{}); err != nil {
		must(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: wuNamespace}}))
	}
	// Two Ready nodes: a migration must have a node to land on, or the updater
	// creates none (its VMIs, on no node, could go to either).
	for _, name := range []string{"wu-node-a", "wu-node-b"} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		must(t, k8s.Create(ctx, node))
		// The API server taints a new node not-ready; no node lifecycle
		// controller runs here to lift the taint once it is Ready.
		node.Spec.Taints = nil
		must(t, k8s.Update(ctx, node))
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		must(t, k8s.Status().Update(ctx, node))
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), node) })
	}
	t.Cleanup(func() {
		bg := context.Background()
		_ = k8s.DeleteAllOf(bg, &v1.VirtualMachineInstance{}, client.InNamespace(wuNamespace))
		_ = k8s.DeleteAllOf(bg, &v1.VirtualMachineInstanceMigration{}, client.InNamespace(wuNamespace))
		_ = k8s.DeleteAllOf(bg, &corev1.Pod{}, client.InNamespace(wuNamespace), client.GracePeriodSeconds(0))
	})
	h.start()
	return h
}

// start runs the updater in a manager of its own; stop ends it (a restart is stop + start).
func (h *updaterHarness) start() {
	scheme, err := operator.NewScheme()
	must(h.t, err)
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	must(h.t, err)
	events, err := eventrecorder.NewForConfig(restConfig, scheme, "virt-operator", logr.Discard())
	must(h.t, err)
	must(h.t, mgr.Add(events))
	r := &workloadupdate.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
		Namespace: h.kv.Namespace, Recorder: events}
	must(h.t, r.SetupWithManager(mgr))
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	h.stop = func() {
		cancel()
		if err := <-done; err != nil {
			h.t.Errorf("manager: %v", err)
		}
	}
	h.t.Cleanup(func() {
		if h.stop != nil {
			h.stop()
			h.stop = nil
		}
	})
}

func (h *updaterHarness) restart() {
	h.stop()
	h.stop = nil
	h.start()
}

// openGate plays the KubeVirt reconciler finishing the upgrade.
func (h *updaterHarness) openGate() {
	h.updateKubeVirtStatus(func(st *v1.KubeVirtStatus) { st.ObservedDeploymentID = st.TargetDeploymentID })
}

func (h *updaterHarness) updateKubeVirtStatus(change func(*v1.KubeVirtStatus)) {
	err := wait.PollUntilContextTimeout(h.ctx, 50*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		kv := &v1.KubeVirt{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(h.kv), kv); err != nil {
			return false, err
		}
		change(&kv.Status)
		return k8s.Status().Update(ctx, kv) == nil, nil
	})
	must(h.t, err)
}

// minimalVMISpec is the least a VMI's schema accepts.
var minimalVMISpec = runtime.RawExtension{Raw: []byte(`{"domain":{"devices":{}}}`)}

// createVMIs makes n Running VMIs on the old launcher, each with a launcher pod.
func (h *updaterHarness) createVMIs(prefix string, n int, migratable bool) {
	for i := range n {
		vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%03d", prefix, i), Namespace: wuNamespace}, Spec: minimalVMISpec}
		must(h.t, k8s.Create(h.ctx, vmi))
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "virt-launcher-" + vmi.Name, Namespace: wuNamespace,
				Labels: map[string]string{"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": string(vmi.UID)}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "compute", Image: oldLauncher}}},
		}
		must(h.t, k8s.Create(h.ctx, pod))
		status := corev1.ConditionFalse
		if migratable {
			status = corev1.ConditionTrue
		}
		vmi.Status = v1.VirtualMachineInstanceStatus{Phase: v1.VMIRunning, LauncherContainerImageVersion: oldLauncher,
			Conditions: []v1.VirtualMachineInstanceCondition{{Type: v1.VMIConditionLiveMigratable, Status: status}}}
		must(h.t, k8s.Update(h.ctx, vmi)) // the main resource: a VMI has no status subresource
	}
}

func (h *updaterHarness) migrations() []v1.VirtualMachineInstanceMigration {
	list := &v1.VirtualMachineInstanceMigrationList{}
	must(h.t, k8s.List(h.ctx, list, client.InNamespace(wuNamespace)))
	return list.Items
}

func (h *updaterHarness) kubeVirt() *v1.KubeVirt {
	kv := &v1.KubeVirt{}
	must(h.t, k8s.Get(h.ctx, client.ObjectKeyFromObject(h.kv), kv))
	return kv
}

func (h *updaterHarness) eventually(what string, cond func() bool) {
	h.t.Helper()
	// A wait deadline, not a bound: 20 s ran out once beside the package's other tests.
	err := wait.PollUntilContextTimeout(h.ctx, 50*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		h.t.Fatalf("waiting for %s: %v\nworkload updates: %+v", what, err, h.kubeVirt().Status.WorkloadUpdates)
	}
}

// finish plays virt-controller: the migration ends in phase p; on success the VMI
// now runs the new launcher.
func (h *updaterHarness) finish(m v1.VirtualMachineInstanceMigration, p v1.VirtualMachineInstanceMigrationPhase) {
	if p == v1.MigrationSucceeded {
		vmi := &v1.VirtualMachineInstance{}
		must(h.t, k8s.Get(h.ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.VMIName}, vmi))
		// The handover and the new launcher show together, as virt-handler reports them.
		vmi.Status.LauncherContainerImageVersion = h.newImg
		vmi.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{MigrationUID: m.UID, Completed: true}
		must(h.t, k8s.Update(h.ctx, vmi))
	}
	m.Status.Phase = p
	must(h.t, k8s.Status().Update(h.ctx, &m))
}

// outdatedIs reads the operator's count: status.outdatedVirtualMachineInstanceWorkloads
// is virt-controller's, and no virt-controller runs here.
func outdatedIs(kv *v1.KubeVirt, n int) bool {
	w := kv.Status.WorkloadUpdates
	return w != nil && w.Outdated == n && kv.Status.OutdatedVirtualMachineInstanceWorkloads == nil
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Closed gate: counted, not moved. Open gate: five migrations, no more, none
// duplicated across a restart; each finished one frees its slot at once; a failed
// one is an Event and the VMI is retried after its backoff.
func TestWorkloadUpdaterMigrations(t *testing.T) {
	// The VMIs have no node: one "node" sends all five.
	h := newUpdaterHarness(t, &v1.WorkloadUpdatePolicy{
		Methods:              []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate},
		MaxMigrationsPerNode: ptr.To(int32(5)), MaxMigrationsPerCluster: ptr.To(int32(5)),
		RetryBackoff: &v1.Duration{Duration: time.Second}})
	h.createVMIs("mig", 12, true)

	h.eventually("the outdated count while the upgrade runs", func() bool {
		kv := h.kubeVirt()
		return outdatedIs(kv, 12) && kv.Status.WorkloadUpdates != nil && kv.Status.WorkloadUpdates.Blocked != ""
	})
	// A closed gate must stay closed, not only be slow: no migration comes
	// without a plan, and the updater has stopped planning.
	settledPlans(t)
	if n := len(h.migrations()); n != 0 {
		t.Fatalf("%d migrations created while observed != target", n)
	}

	h.openGate()
	h.eventually("five migrations", func() bool { return len(h.migrations()) == 5 })
	// A duplicate would come from the restarted updater's plans: once it has
	// planned and stopped, whatever it created is there.
	planned := settledPlans(t)
	h.restart()
	h.eventually("a plan of the restarted updater", func() bool { return plansMade(t) > planned })
	settledPlans(t)
	migs := h.migrations()
	if len(migs) != 5 {
		t.Fatalf("%d migrations after a restart, want 5: duplicates or the limit broken", len(migs))
	}
	seen := map[string]bool{}
	for _, m := range migs {
		if seen[m.Spec.VMIName] || !core.IsWorkloadUpdate(&m) || *m.Spec.Priority != v1.PrioritySystemCritical {
			t.Fatalf("bad or duplicate migration %s for %s", m.Name, m.Spec.VMIName)
		}
		seen[m.Spec.VMIName] = true
	}

	h.finish(migs[0], v1.MigrationSucceeded)
	h.finish(migs[1], v1.MigrationFailed)
	h.eventually("two freed slots used", func() bool { return len(h.migrations()) == 7 })
	h.eventually("a FailedMigration event", func() bool {
		return hasEvent(h, migs[1].Spec.VMIName, corev1.EventTypeWarning, core.ReasonFailedMigration)
	})
	// The migrations created are one Event on the CR per process (the series
	// lives in its memory; the updater was restarted once), none per VMI.
	if hasEvent(h, migs[0].Spec.VMIName, corev1.EventTypeNormal, core.ReasonSuccessfulCreate) {
		t.Fatal("a SuccessfulCreate event on the VMI: the migrations created are announced on the KubeVirt CR")
	}
	h.eventually("a SuccessfulCreate event on the KubeVirt CR from each process", func() bool {
		list := &eventsv1.EventList{}
		must(h.t, k8s.List(h.ctx, list, client.InNamespace(h.kv.Namespace)))
		n := 0
		for _, e := range list.Items {
			if e.Regarding.Kind == "KubeVirt" && e.Regarding.Name == h.kv.Name && e.Reason == core.ReasonSuccessfulCreate {
				n++
			}
		}
		return n == 2
	})
	h.eventually("status counts", func() bool {
		kv := h.kubeVirt()
		w := kv.Status.WorkloadUpdates
		return outdatedIs(kv, 11) && w != nil && w.Blocked == "" && w.MigrationsInFlight == 5
	})

	// Drain: succeed everything as it comes; the failed VMI must come back.
	h.eventually("every VMI updated", func() bool {
		for _, m := range h.migrations() {
			if !core.IsFinished(&m) {
				h.finish(m, v1.MigrationSucceeded)
			}
		}
		return outdatedIs(h.kubeVirt(), 0)
	})
	retried := 0
	for _, m := range h.migrations() {
		if m.Spec.VMIName == migs[1].Spec.VMIName {
			retried++
		}
	}
	if retried != 2 {
		t.Fatalf("the VMI whose migration failed got %d migrations, want 2 (failed, retried)", retried)
	}
}

// Non-migratable VMIs are evicted in batches, one batch per interval; a VMI
// without a launcher pod is a Warning Event, not a crash. The interval is
// checked on the objects' own times (the batch times the updater records, its
// Events), never on when this test happened to see a batch.
func TestWorkloadUpdaterEvictsInBatches(t *testing.T) {
	interval := 3 * time.Second
	h := newUpdaterHarness(t, &v1.WorkloadUpdatePolicy{
		Methods:               []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodEvict},
		BatchEvictionSize:     ptr.To(int32(4)),
		BatchEvictionInterval: &v1.Duration{Duration: interval},
	})
	h.createVMIs("ev", 6, false)
	orphan := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: wuNamespace}, Spec: minimalVMISpec}
	must(t, k8s.Create(h.ctx, orphan))
	orphan.Status = v1.VirtualMachineInstanceStatus{Phase: v1.VMIRunning, LauncherContainerImageVersion: oldLauncher}
	must(t, k8s.Update(h.ctx, orphan))
	batchTimes := followBatchTimes(t, h)
	h.openGate()

	pods := func() int {
		list := &corev1.PodList{}
		must(t, k8s.List(h.ctx, list, client.InNamespace(wuNamespace)))
		n := 0
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				n++
			}
		}
		return n
	}
	h.eventually("the first batch", func() bool { return pods() <= 3 }) // 4 VMIs, one may be the orphan
	// VMI events inside the interval must not bring the next batch forward: a
	// condition of the orphan (a candidate in every batch, its eviction always
	// fails) flips until the next batch is recorded, each flip a plan.
	h.eventually("the first batch time", func() bool { return len(batchTimes()) >= 1 })
	for i := 0; len(batchTimes()) < 2 && i < 200; i++ {
		flip := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"status":{"conditions":[{"type":"AgentConnected","status":%q}]}}`,
			[]string{"True", "False"}[i%2])))
		must(t, k8s.Patch(h.ctx, &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: wuNamespace}}, flip))
		time.Sleep(100 * time.Millisecond)
	}
	h.eventually("the second batch", func() bool { return pods() == 0 })
	h.eventually("a FailedEvict event for the VMI without a pod", func() bool {
		return hasEvent(h, "orphan", corev1.EventTypeWarning, core.ReasonFailedEvict)
	})
	h.eventually("two batch times recorded", func() bool { return len(batchTimes()) >= 2 })

	// status.workloadUpdates.lastEvictionBatch is written before a batch's
	// evictions, rounded up to the second; the interval is whole seconds, so
	// consecutive batch times are at least the interval apart exactly.
	times := batchTimes()
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < interval {
			t.Errorf("eviction batch %d recorded %s after the previous one (%v), interval %s", i, gap, times, interval)
		}
	}
	// The Events agree: a batch decided at b (> the first recorded time - 1 s)
	// evicts no earlier than b, and the next batch comes no earlier than
	// b + interval, so the evictions Evented before the first recorded time
	// - 1 s + interval are the first batch's alone, however late their Events are.
	list := &eventsv1.EventList{}
	must(t, k8s.List(h.ctx, list, client.InNamespace(wuNamespace)))
	firstBatchEnd := times[0].Add(interval - time.Second)
	inFirst := 0
	for _, e := range list.Items {
		if (e.Reason == core.ReasonSuccessfulEvict || e.Reason == core.ReasonFailedEvict) && e.EventTime.Time.Before(firstBatchEnd) {
			inFirst++
		}
	}
	if inFirst > 4 {
		t.Errorf("%d evictions Evented within the interval after the first batch, batch size 4", inFirst)
	}
	// The count is published after a batch's evictions, which the pods show
	// first: wait for it rather than read it once (read at once, a loaded
	// machine saw the first batch's 3).
	var w *v1.WorkloadUpdatesStatus
	err := wait.PollUntilContextTimeout(h.ctx, 50*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		w = h.kubeVirt().Status.WorkloadUpdates
		return w != nil && w.Evicted == 6 && w.LastEvictionBatch != nil, nil
	})
	if err != nil {
		t.Fatalf("status.workloadUpdates = %+v, want 6 evicted and a batch time: %v", w, err)
	}
}

// followBatchTimes watches the KubeVirt CR and returns what it saw so far:
// every distinct status.workloadUpdates.lastEvictionBatch, in order. A watch
// shows every write, however slow the machine.
func followBatchTimes(t *testing.T, h *updaterHarness) func() []time.Time {
	t.Helper()
	scheme, err := operator.NewScheme()
	must(t, err)
	wc, err := client.NewWithWatch(restConfig, client.Options{Scheme: scheme})
	must(t, err)
	var (
		mu    sync.Mutex
		times []time.Time
	)
	// Listed first, so that the watch starts from now even if it is set up late.
	list := &v1.KubeVirtList{}
	must(t, wc.List(h.ctx, list, client.InNamespace(h.kv.Namespace)))
	for _, kv := range list.Items {
		if wu := kv.Status.WorkloadUpdates; kv.Name == h.kv.Name && wu != nil && wu.LastEvictionBatch != nil {
			times = append(times, wu.LastEvictionBatch.Time)
		}
	}
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		rv := list.ResourceVersion
		for ctx.Err() == nil {
			w, err := wc.Watch(ctx, &v1.KubeVirtList{}, client.InNamespace(h.kv.Namespace),
				&client.ListOptions{Raw: &metav1.ListOptions{FieldSelector: "metadata.name=" + h.kv.Name, ResourceVersion: rv}})
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				kv, ok := ev.Object.(*v1.KubeVirt)
				if !ok {
					// An error (the resourceVersion expired): start over from
					// now. A batch time missed only widens a gap.
					rv = ""
					continue
				}
				rv = kv.ResourceVersion
				if wu := kv.Status.WorkloadUpdates; wu != nil && wu.LastEvictionBatch != nil {
					mu.Lock()
					if n := len(times); n == 0 || !times[n-1].Equal(wu.LastEvictionBatch.Time) {
						times = append(times, wu.LastEvictionBatch.Time)
					}
					mu.Unlock()
				}
			}
			w.Stop()
		}
	}()
	return func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Time(nil), times...)
	}
}

func hasEvent(h *updaterHarness, vmiName, eventType, reason string) bool {
	list := &eventsv1.EventList{}
	must(h.t, k8s.List(h.ctx, list, client.InNamespace(wuNamespace)))
	for _, e := range list.Items {
		if e.Regarding.Name == vmiName && e.Type == eventType && e.Reason == reason {
			return true
		}
	}
	return false
}

// With upstream's field set, virt-controller moves the VMs: the operator only
// counts them and says who acts.
func TestWorkloadUpdaterOnlyCountsWhenVirtControllerActs(t *testing.T) {
	h := newUpdaterHarnessFor(t, v1.KubeVirtSpec{WorkloadUpdateStrategy: v1.KubeVirtWorkloadUpdateStrategy{
		WorkloadUpdateMethods: []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate, v1.WorkloadUpdateMethodEvict}}})
	h.createVMIs("up", 4, true)
	h.createVMIs("upstuck", 2, false)
	h.openGate()
	h.eventually("virt-controller named as the actor, the VMIs counted", func() bool {
		w := h.kubeVirt().Status.WorkloadUpdates
		return w != nil && w.Actor == v1.ActorVirtController && w.Outdated == 6 &&
			strings.Contains(w.Blocked, "virt-controller moves the VMs")
	})
	// The pass that named virt-controller wrote this after whatever it moved;
	// the passes after it have had their say once the updater stops planning.
	settledPlans(t)
	if n := len(h.migrations()); n != 0 {
		t.Fatalf("the operator created %d migrations beside virt-controller", n)
	}
	pods := &corev1.PodList{}
	must(t, k8s.List(h.ctx, pods, client.InNamespace(wuNamespace)))
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			t.Fatalf("the operator evicted %s beside virt-controller", p.Name)
		}
	}
	if outdated := h.kubeVirt().Status.OutdatedVirtualMachineInstanceWorkloads; outdated != nil {
		t.Fatalf("the operator wrote virt-controller's outdatedVirtualMachineInstanceWorkloads (%d)", *outdated)
	}
}

// VMI churn while the gate is closed costs no plan at all.
func TestWorkloadUpdaterIsQuietWhileGated(t *testing.T) {
	h := newUpdaterHarness(t, &v1.WorkloadUpdatePolicy{Methods: []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate}})
	h.createVMIs("quiet", 5, true)
	h.eventually("the gated count", func() bool { return outdatedIs(h.kubeVirt(), 5) })
	before := settledPlans(t)
	for round := range 10 {
		for i := range 5 {
			vmi := &v1.VirtualMachineInstance{}
			must(t, k8s.Get(h.ctx, client.ObjectKey{Namespace: wuNamespace, Name: fmt.Sprintf("quiet-%03d", i)}, vmi))
			vmi.Status.Conditions = append(vmi.Status.Conditions[:1], v1.VirtualMachineInstanceCondition{
				Type: "AgentConnected", Status: corev1.ConditionStatus([]string{"True", "False"}[round%2])})
			must(t, k8s.Update(h.ctx, vmi))
		}
	}
	// A closed gate drops the VMI events as they arrive, so no event marks
	// their end; the window is settledPlans': a plan the churn caused would
	// show in it, and restart it, however late the events came.
	if made := settledPlans(t) - before; made != 0 {
		t.Fatalf("50 VMI updates under a closed gate cost %v plans, want 0", made)
	}
	h.openGate()
	h.eventually("the gate opened: a migration", func() bool { return len(h.migrations()) > 0 })
}

// settledPlans waits for the updater to stop planning (the creation burst's
// plans and the status writes they cause): no plan for two seconds, rather
// than a fixed sleep that a busy machine can outlast. An updater that never
// stops planning fails it.
func settledPlans(t *testing.T) float64 {
	t.Helper()
	const quiet = 2 * time.Second
	last, since := plansMade(t), time.Now()
	for deadline := time.Now().Add(waitTimeout); time.Since(since) < quiet; time.Sleep(100 * time.Millisecond) {
		if n := plansMade(t); n != last {
			last, since = n, time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("the updater keeps planning under a closed gate: %v plans", last)
		}
	}
	return last
}

func plansMade(t *testing.T) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	must(t, err)
	for _, f := range families {
		if f.GetName() == workloadupdate.PlansMetric {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("%s is not registered", workloadupdate.PlansMetric)
	return 0
}
