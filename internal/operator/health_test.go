package operator

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The names are what upstream's PrometheusRule records and alerts on: pinned.
func TestOperatorMetricNames(t *testing.T) {
	if LeadingMetric != "kubevirt_virt_operator_leading_status" || ReadyMetric != "kubevirt_virt_operator_ready_status" {
		t.Fatal("the operator metrics are renamed; upstream's rules read the old names")
	}
	if n, err := testutil.GatherAndCount(metrics.Registry, LeadingMetric, ReadyMetric); err != nil || n != 2 {
		t.Fatalf("%d of 2 operator metrics served (%v)", n, err)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestLeadingAndReadyStatus(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &readiness{cache: &informertest.FakeInformers{Synced: ptrTo(true)}}
	done := make(chan struct{}, 2)
	go func() { _ = leading{}.Start(ctx); done <- struct{}{} }()
	go func() { _ = r.Start(ctx); done <- struct{}{} }()
	eventually(t, "leading 1 and ready 1", func() bool {
		return testutil.ToFloat64(leadingStatus) == 1 && testutil.ToFloat64(readyStatus) == 1 && r.check(nil) == nil
	})
	cancel()
	<-done
	<-done
	if testutil.ToFloat64(leadingStatus) != 0 || testutil.ToFloat64(readyStatus) != 0 || r.check(nil) == nil {
		t.Fatal("a stopped operator still reports leading or ready")
	}
	if !(leading{}).NeedLeaderElection() || r.NeedLeaderElection() {
		t.Fatal("leading must run only on the leader, readiness on every replica")
	}
}

func ptrTo[T any](v T) *T { return &v }
