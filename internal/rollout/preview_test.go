package rollout

import (
	"strings"
	"testing"

	apiv1 "github.com/virt-operator/virt-operator/api/v1"
)

// What `virt-operator plan` shows of the checks: which run, on which VMI,
// with which timeout, as the Verifying phase would decide now.
func TestPreviewChecks(t *testing.T) {
	vmis := []apiv1.VirtualMachineInstance{vmi("a", "node-0"), vmi("b", "node-1"), vmi("c", "node-0", unlabelled)}
	all := withChecks(DataPlaneChecks{CanaryVMIs: true, CanaryPod: true, Probe: probeOn("app=probe").Probe})
	got := PreviewChecks(all, []string{"node-0"}, DataPlane{VMIs: vmis, Nodes: threeNodes()}, nil)
	if len(got) != 3 || got[0].Name != CheckCanaryVMIs || !strings.Contains(got[0].Plan, "the 2 VMIs running on node-0 must stay Running") ||
		got[1].Name != CheckCanaryPod || !strings.Contains(got[1].Plan, "node-0 not be marked kubevirt.io/schedulable=false") ||
		got[2].VMI != "default/a" || got[2].Timeout != DefaultProbeTimeout ||
		got[2].Plan != "moves VMI default/a off node node-0 and back onto it (2 live migrations, one at a time), within 5m0s of the first" {
		t.Fatalf("preview %+v", got)
	}
	busy := PreviewChecks(all, []string{"node-0"}, DataPlane{VMIs: vmis, Nodes: threeNodes()},
		[]Migration{{Namespace: "default", Name: "users", SourceNode: "node-0", TargetNode: "node-2"}})
	if !strings.Contains(busy[2].Plan, "would wait: VMI default/a: migration default/users runs on node node-0") {
		t.Fatalf("busy canary node: %+v", busy[2])
	}
	none := withChecks(passWhenNone(probeOn("app=nothing")))
	if got := PreviewChecks(none, []string{"node-0"}, DataPlane{VMIs: vmis, Nodes: threeNodes()}, nil); len(got) != 1 ||
		got[0].Plan != "no VMI matches vmiSelector app=nothing: would pass without a migration (whenNoneEligible: Pass)" {
		t.Fatalf("nothing selected: %+v", got)
	}
	if got := PreviewChecks(DefaultPolicy(), []string{"node-0"}, DataPlane{}, nil); got != nil {
		t.Fatalf("no checks: %+v", got)
	}
}
