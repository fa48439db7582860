package install_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/rollout"
	"github.com/virt-operator/virt-operator/internal/sandbox/vmsim"
)

// phaseClock records when the virt-handler rollout was first seen in each
// phase, from a watch of the KubeVirt CR (status times keep whole seconds).
type phaseClock struct {
	mu    sync.Mutex
	first map[string]time.Time
}

func (e *env) watchPhases(ctx context.Context) *phaseClock {
	pc := &phaseClock{first: map[string]time.Time{}}
	wc, err := client.NewWithWatch(e.sb.RESTConfig(), client.Options{Scheme: e.c.Scheme()})
	if err != nil {
		e.t.Fatal(err)
	}
	w, err := wc.Watch(ctx, &v1.KubeVirtList{}, client.InNamespace(namespace))
	if err != nil {
		e.t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if kv, ok := ev.Object.(*v1.KubeVirt); ok && kv.Status.HandlerRollout != nil {
				pc.mu.Lock()
				if _, seen := pc.first[kv.Status.HandlerRollout.Phase]; !seen {
					pc.first[kv.Status.HandlerRollout.Phase] = time.Now()
				}
				pc.mu.Unlock()
			}
		}
	}()
	return pc
}

// between is how long after phase a the rollout reached phase b (0 when
// either was not seen).
func (pc *phaseClock) between(a, b rollout.Phase) time.Duration {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	from, okA := pc.first[string(a)]
	to, okB := pc.first[string(b)]
	if !okA || !okB {
		return 0
	}
	return to.Sub(from)
}

// dataPlaneChecksUpgrade is a second upgrade of the running install, to
// v1.9.1, with every data-plane check on over vms VMs spread over the nodes:
// it reports how long the checks held the rollout between the bake and the
// fast step (checks-added-s: Verifying, as the watch saw it; the canary VMIs
// check runs within the bake and adds nothing there), the whole upgrade, and
// each check's time as its status recorded it.
func (e *env) dataPlaneChecksUpgrade(b *testing.B, nodes, vms int) {
	kv := e.kubeVirt()
	var names []string
	for i := range nodes {
		names = append(names, fmt.Sprintf("node-%03d", i))
	}
	e.runVMs(vmsim.CreateOptions{NamePrefix: "probe", Count: vms, Nodes: names, Labels: map[string]string{probeLabel: "yes"}}, launcherImage(kv))
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	pc := e.watchPhases(ctx)
	start := time.Now()
	e.updateSpec(func(s *v1.KubeVirtSpec) {
		s.ImageTag = "v1.9.1"
		s.HandlerRollout = &v1.HandlerRolloutPolicy{DataPlaneChecks: dataPlaneChecks()}
	})
	e.eventually("observed == target v1.9.1", 10*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		return kv.Status.ObservedKubeVirtVersion == "v1.9.1" && kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID, nil
	})
	upgrade := time.Since(start)
	hr := e.kubeVirt().Status.HandlerRollout
	if hr.Phase != string(rollout.PhaseSuccessful) {
		b.Fatalf("the upgrade with checks ended %s: %s", hr.Phase, hr.Message)
	}
	b.ReportMetric(pc.between(rollout.PhaseVerifying, rollout.PhaseIncreasing).Seconds(), "checks-added-s")
	b.ReportMetric(upgrade.Seconds(), "upgrade-with-checks-s")
	for _, c := range hr.DataPlaneChecks {
		if c.StartedAt != nil && c.FinishedAt != nil {
			b.ReportMetric(c.FinishedAt.Sub(c.StartedAt.Time).Seconds(), "check-"+c.Name+"-s")
		}
		b.Logf("check %s %s: %s", c.Name, c.State, c.Message)
	}
}
