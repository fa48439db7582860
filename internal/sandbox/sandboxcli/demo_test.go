package sandboxcli

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/cliutil/clitest"
)

func TestSandboxRunRefusesBadDemoCounts(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--vms", "-1"}, "--vms"},
		{[]string{"--vms", "2", "--non-migratable", "3"}, "--non-migratable"},
		{[]string{"--non-migratable", "-1"}, "--non-migratable"},
	} {
		out, err := clitest.Run(t, NewRunCommand(), append([]string{"--dir", t.TempDir()}, tc.args...)...)
		clitest.AssertUsageError(t, out, err, tc.want)
	}
}

func TestProgressLine(t *testing.T) {
	kv := &v1.KubeVirt{Status: v1.KubeVirtStatus{
		ObservedKubeVirtVersion: "v1.8.4", TargetKubeVirtVersion: "v1.9.0",
		HandlerRollout:                          &v1.HandlerRolloutStatus{Phase: "Canary", UpdatedPods: 1, DesiredPods: 3},
		OutdatedVirtualMachineInstanceWorkloads: ptr.To(6),
		WorkloadUpdates:                         &v1.WorkloadUpdatesStatus{Blocked: "upgrading", Actor: v1.ActorVirtOperator},
	}}
	got := progressLine(kv)
	for _, want := range []string{"observed v1.8.4, target v1.9.0", "virt-handler Canary 1/3", "VMIs outdated 6", "virt-operator: migrations 0", "waiting: the upgrade is not done"} {
		if !strings.Contains(got, want) {
			t.Errorf("progress line %q lacks %q", got, want)
		}
	}
	kv.Status.WorkloadUpdates.Actor = v1.ActorVirtController
	if got := progressLine(kv); !strings.Contains(got, "moved by virt-controller") || strings.Contains(got, "waiting") {
		t.Errorf("progress line %q: want the VMs moved by virt-controller, no operator counters", got)
	}
}
