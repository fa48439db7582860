package manager

import (
	"testing"

	"github.com/virt-operator/virt-operator/internal/operator"
)

func TestPriorityClass(t *testing.T) {
	pc, err := PriorityClass()
	if err != nil {
		t.Fatal(err)
	}
	if pc.Name != "kubevirt-cluster-critical" || pc.Value != 1_000_000_000 || pc.GlobalDefault {
		t.Errorf("%+v", pc)
	}
}

// The operator reads its container's memory limit from the environment to set
// Go's soft limit (internal/operator.TuneGC); the reference must name its own
// container, or a renamed one would make the pod fail to start.
func TestDeploymentPassesItsMemoryLimit(t *testing.T) {
	dep, err := Deployment()
	if err != nil {
		t.Fatal(err)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	for _, e := range c.Env {
		if e.Name != operator.MemoryLimitEnv {
			continue
		}
		if r := e.ValueFrom.ResourceFieldRef; r == nil || r.ContainerName != c.Name || r.Resource != "limits.memory" || !r.Divisor.IsZero() {
			t.Fatalf("%s from %+v, want its own container's limits.memory in bytes", e.Name, e.ValueFrom)
		}
		if c.Resources.Limits.Memory().IsZero() {
			t.Fatalf("%s has no memory limit to pass", c.Name)
		}
		return
	}
	t.Fatalf("container %s has no %s", c.Name, operator.MemoryLimitEnv)
}
