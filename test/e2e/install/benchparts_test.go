package install_test

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// The benchmarks' pure parts, without a sandbox.

func TestLoadWindowFromMetrics(t *testing.T) {
	sample := func(at time.Time, cpu float64, text string) controlPlaneLoad {
		s := controlPlaneLoad{at: at, cpu: map[string]float64{"kube-apiserver": cpu}, requests: map[string]float64{}}
		s.addMetrics([]byte(text))
		return s
	}
	t0 := time.Unix(1000, 0)
	before := sample(t0, 10, `# HELP apiserver_request_total x
apiserver_request_total{code="200",resource="pods",verb="GET"} 100
apiserver_request_total{code="201",resource="pods",verb="POST"} 50
apiserver_request_total{code="200",resource="pods",verb="WATCH"} 7
apiserver_request_duration_seconds_sum{resource="pods",verb="GET"} 1
apiserver_request_duration_seconds_count{resource="pods",verb="GET"} 150
apiserver_request_duration_seconds_sum{resource="pods",verb="WATCH"} 9000
apiserver_request_duration_seconds_count{resource="pods",verb="WATCH"} 7
etcd_request_total{operation="get"} 5
not a metric line
apiserver_request_total{code="200",verb="GET"} not-a-number
`)
	after := sample(t0.Add(10*time.Second), 15, `apiserver_request_total{code="200",resource="pods",verb="GET"} 200
apiserver_request_total{code="201",resource="pods",verb="POST"} 150
apiserver_request_total{code="200",resource="pods",verb="WATCH"} 9
apiserver_request_duration_seconds_sum{resource="pods",verb="GET"} 5
apiserver_request_duration_seconds_count{resource="pods",verb="GET"} 350
apiserver_request_duration_seconds_sum{resource="pods",verb="WATCH"} 99000
apiserver_request_duration_seconds_count{resource="pods",verb="WATCH"} 9
`)
	before.byCommand = map[string]float64{"etcd": 1, "idle": 4}
	after.byCommand = map[string]float64{"etcd": 3, "idle": 4, "short": 0.1} // short: 0.01 cores, below the list's floor
	got := loadWindow{from: before, to: after}.String()
	// 200 requests in 10 s, 100 of them writes; 4 s over 200 requests; WATCH left out.
	want := "10 s: CPU cores kube-apiserver 0.50; the machine 0.00 of " + strconv.Itoa(runtime.NumCPU()) + " busy (by command: etcd 0.20); API server 20 requests/s (10 writes/s), mean latency 20 ms"
	if got != want {
		t.Errorf("window:\n got %s\nwant %s", got, want)
	}
	if got := (loadWindow{from: after, to: after}).String(); got != "no window" {
		t.Errorf("an empty window: %q", got)
	}
}

func TestMachineBusySeconds(t *testing.T) {
	// user 100, nice 10, system 50, idle 900, iowait 40, irq 5, softirq 5, steal 30, guest 20, guest_nice 0 (ticks)
	got, err := machineBusySeconds([]byte("cpu  100 10 50 900 40 5 5 30 20 0\ncpu0 1 2 3 4 5 6 7 8 9 0\n"))
	if err != nil || got != 1.7 {
		t.Errorf("busy = %v, %v; want 1.7 s (user, nice, system, irq, softirq)", got, err)
	}
	for _, bad := range []string{"", "intr 1 2 3", "cpu 1 2 x 4 5 6", "cpu 1 2"} {
		if _, err := machineBusySeconds([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	// A command with a space and a parenthesis; utime 150 and stime 50 ticks.
	line := "4242 (kube (x) 1) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 50 0 0 20 0 12 0 100 0 0\n"
	command, secs, err := parseProcStat([]byte(line))
	if err != nil || command != "kube (x) 1" || secs != 2 {
		t.Errorf("parseProcStat = %q, %v, %v; want \"kube (x) 1\", 2, nil", command, secs, err)
	}
	if command, _, err := procStat(os.Getpid()); err != nil || !strings.HasSuffix(command, ".test") {
		t.Errorf("this process: %q, %v", command, err)
	}
	for _, bad := range []string{"", "4242 kube S 1", "4242 (kube) S 1 2 3", "4242 (kube) S 1 4242 4242 0 -1 4194560 100 0 0 0 x 50 0"} {
		if _, _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestAuditResource(t *testing.T) {
	ev := func(verb, resource, sub, uri string) auditEvent {
		e := auditEvent{Verb: verb, RequestURI: uri}
		e.ObjectRef.Resource, e.ObjectRef.Subresource = resource, sub
		return e
	}
	for _, c := range []struct {
		ev   auditEvent
		want string
	}{
		{ev("patch", "kubevirts", "status", "/apis/kubevirt.io/v1/namespaces/kubevirt/kubevirts/kv/status"), "kubevirts/status"},
		{ev("get", "", "", "/apis/monitoring.coreos.com/v1?timeout=32s"), "(path /apis/monitoring.coreos.com/v1)"},
		{ev("watch", "pods", "", "/api/v1/pods?allowWatchBookmarks=true&sendInitialEvents=true&watch=true"), "pods (with its initial list)"},
		{ev("watch", "pods", "", "/api/v1/pods?resourceVersion=5&watch=true"), "pods"},
	} {
		if got := auditResource(c.ev); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.ev.Verb, c.ev.RequestURI, got, c.want)
		}
	}
}

func TestDrainFloorRatio(t *testing.T) {
	// 20 s for 10 VMIs against the floor's 10 s for 5: the same per VMI.
	if got := drainFloorRatio(20*time.Second, 10, 10*time.Second, 5); got != 1 {
		t.Errorf("ratio = %v, want 1", got)
	}
	for _, c := range []struct {
		busiest, floorBusiest int
		floor                 time.Duration
	}{{0, 5, time.Second}, {5, 0, time.Second}, {5, 5, 0}} {
		if got := drainFloorRatio(time.Second, c.busiest, c.floor, c.floorBusiest); got != 0 {
			t.Errorf("drainFloorRatio with %+v = %v, want 0 (nothing to compare)", c, got)
		}
	}
}

func TestFloorFinished(t *testing.T) {
	f := &floorFinished{waiting: map[string]chan struct{}{}, finished: map[string]bool{}}
	migration := func(name string, phase v1.VirtualMachineInstanceMigrationPhase) *v1.VirtualMachineInstanceMigration {
		m := &v1.VirtualMachineInstanceMigration{}
		m.Name, m.Status.Phase = name, phase
		return m
	}
	waiting := f.await("a")
	f.observe(migration("a", v1.MigrationRunning))
	select {
	case <-waiting:
		t.Fatal("a running migration counted as finished")
	default:
	}
	f.observe(migration("a", v1.MigrationFailed))
	f.observe(migration("a", v1.MigrationFailed)) // an update of a finished one counts once
	<-waiting
	f.observe(migration("b", v1.MigrationSucceeded)) // seen before it is awaited
	<-f.await("b")
	f.observe("not a migration")
	if n := f.failed(); n != 1 {
		t.Errorf("failed = %d, want 1", n)
	}
	if len(f.waiting) != 0 {
		t.Errorf("channels left waiting: %v", strings.Join(keys(f.waiting), ", "))
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestMostFirst(t *testing.T) {
	got := mostFirst(map[string]int{"get pods": 2, "patch kubevirts/status": 5, "get (path /apis)": 2})
	if want := "patch kubevirts/status 5, get (path /apis) 2, get pods 2"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := mostFirst(nil); got != "none" {
		t.Errorf("nothing: %q", got)
	}
}

// The drain floor moves each node's VMIs to the next node: a permutation, so
// every node ends with as many VMIs as its predecessor had.
func TestNextOf(t *testing.T) {
	next := nextOf([]string{"node-c", "node-a", "node-b"})
	want := map[string]string{"node-a": "node-b", "node-b": "node-c", "node-c": "node-a"}
	if len(next) != len(want) {
		t.Fatalf("nextOf = %v, want %v", next, want)
	}
	for from, to := range want {
		if next[from] != to {
			t.Errorf("after %s: %q, want %q", from, next[from], to)
		}
	}
	if got := nextOf([]string{"only"}); got["only"] != "only" {
		t.Errorf("one node: %v, want itself (the simulator then picks another)", got)
	}
	if got := nextOf(nil); len(got) != 0 {
		t.Errorf("no nodes: %v", got)
	}
}

// Each CRD of a deletion is timed to the first look that no longer finds it;
// one that was never seen is not timed.
func TestCRDDeletions(t *testing.T) {
	start := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	d := newCRDDeletions(start)
	if d.observe([]string{"vms.kubevirt.io", "vmis.kubevirt.io", "kubevirts.kubevirt.io"}, start) {
		t.Fatal("all gone while three are there")
	}
	d.observe([]string{"vms.kubevirt.io", "vmis.kubevirt.io"}, start.Add(time.Second))
	d.observe([]string{"vmis.kubevirt.io"}, start.Add(5*time.Second))
	if !d.observe(nil, start.Add(11*time.Second)) {
		t.Fatal("not all gone with none there")
	}
	if got, want := d.slowest(2), "vmis 11s, vms 5s"; got != want {
		t.Errorf("slowest(2) = %q, want %q", got, want)
	}
	if got := d.took(); got != 11*time.Second {
		t.Errorf("took %v, want 11s", got)
	}
	if got := newCRDDeletions(start).slowest(3); got != "" {
		t.Errorf("nothing observed: %q", got)
	}
}
