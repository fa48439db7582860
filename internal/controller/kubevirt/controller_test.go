package kubevirt

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func TestNextPhase(t *testing.T) {
	now := metav1.Now()
	cases := []struct {
		name     string
		phase    v1.KubeVirtPhase
		deleting bool
		want     v1.KubeVirtPhase
	}{
		{"a new CR starts deploying", v1.KubeVirtPhaseUnset, false, v1.KubeVirtPhaseDeploying},
		{"a deploying CR stays deploying", v1.KubeVirtPhaseDeploying, false, v1.KubeVirtPhaseDeploying},
		{"a deployed CR stays deployed", v1.KubeVirtPhaseDeployed, false, v1.KubeVirtPhaseDeployed},
		{"a CR deleted before its first reconcile is not marked deploying", v1.KubeVirtPhaseUnset, true, v1.KubeVirtPhaseUnset},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kv := &v1.KubeVirt{Status: v1.KubeVirtStatus{Phase: c.phase}}
			if c.deleting {
				kv.DeletionTimestamp = &now
			}
			if got := NextPhase(kv); got != c.want {
				t.Fatalf("NextPhase = %q, want %q", got, c.want)
			}
		})
	}
}
