package install_test

import (
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
	got := loadWindow{from: before, to: after}.String()
	// 200 requests in 10 s, 100 of them writes; 4 s over 200 requests; WATCH left out.
	want := "10 s: CPU cores kube-apiserver 0.50; API server 20 requests/s (10 writes/s), mean latency 20 ms"
	if got != want {
		t.Errorf("window:\n got %s\nwant %s", got, want)
	}
	if got := (loadWindow{from: after, to: after}).String(); got != "no window" {
		t.Errorf("an empty window: %q", got)
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
