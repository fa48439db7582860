package install_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// BenchmarkOperatorLifecycle measures, on a 3-node sandbox with the operator
// binary as its own process: KubeVirt CR created → Available, imageTag changed
// → observed == target, CR deleted → gone, and the operator's peak resident
// memory. Run it with `make bench`.
func BenchmarkOperatorLifecycle(b *testing.B) {
	for range b.N {
		benchLifecycleOnce(b)
	}
}

func benchLifecycleOnce(b *testing.B) {
	e := startEnvWithoutOperator(b, 3)
	p := &operatorProcess{t: b, kubeconfig: e.sb.Kubeconfig()}
	p.start()
	defer p.kill()
	ctx := context.Background()

	start := time.Now()
	e.createKubeVirt(v1.KubeVirtSpec{})
	first := e.waitAvailable(3 * time.Minute)
	b.ReportMetric(time.Since(start).Seconds(), "install-s")

	start = time.Now()
	e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.7.0" })
	e.eventually("observed == target", 3*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		return kv.Status.ObservedDeploymentID != first.Status.ObservedDeploymentID && kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID, nil
	})
	b.ReportMetric(time.Since(start).Seconds(), "upgrade-s")

	start = time.Now()
	if err := e.c.Delete(ctx, e.kubeVirt()); err != nil {
		b.Fatal(err)
	}
	e.eventually("the CR gone", 3*time.Minute, func() (bool, error) {
		err := e.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "kubevirt"}, &v1.KubeVirt{})
		return err != nil && client.IgnoreNotFound(err) == nil, nil
	})
	b.ReportMetric(time.Since(start).Seconds(), "uninstall-s")
	b.ReportMetric(peakRSSMiB(b, p.cmd.Process.Pid), "operator-peak-rss-MiB")
}

// peakRSSMiB is the process' VmHWM (its peak resident set).
func peakRSSMiB(b *testing.B, pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				b.Fatal(err)
			}
			return float64(kb) / 1024
		}
	}
	b.Fatal("no VmHWM in /proc status")
	return 0
}
