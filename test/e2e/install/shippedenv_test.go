package install_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/virt-operator/virt-operator/config/manager"
	"github.com/virt-operator/virt-operator/internal/operator"
)

// shippedOperatorEnv is environ as the operator's container has it, for the
// operator run as a process: the collector's settings the test process
// inherited (make test's GOGC=400) taken out, so it runs at its own default,
// and the memory limit config/manager gives the container passed as the
// Deployment passes it, so Go's soft limit is the one that ships. A benchmark
// then measures the operator as it runs in a cluster.
func shippedOperatorEnv(environ []string) ([]string, error) {
	dep, err := manager.Deployment()
	if err != nil {
		return nil, err
	}
	limit := dep.Spec.Template.Spec.Containers[0].Resources.Limits.Memory()
	if limit.IsZero() {
		return nil, fmt.Errorf("config/manager's operator container has no memory limit")
	}
	env := slices.DeleteFunc(slices.Clone(environ), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "GOGC" || name == "GOMEMLIMIT" || name == operator.MemoryLimitEnv
	})
	return append(env, operator.MemoryLimitEnv+"="+strconv.FormatInt(limit.Value(), 10)), nil
}

func TestShippedOperatorEnv(t *testing.T) {
	env, err := shippedOperatorEnv([]string{"PATH=/bin", "GOGC=400", "GOMEMLIMIT=1GiB", operator.MemoryLimitEnv + "=1", "GOGCX=1"})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := manager.Deployment()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PATH=/bin", "GOGCX=1", operator.MemoryLimitEnv + "=" + strconv.FormatInt(dep.Spec.Template.Spec.Containers[0].Resources.Limits.Memory().Value(), 10)}
	if !slices.Equal(env, want) {
		t.Fatalf("env %q, want %q", env, want)
	}
	if limit, err := operator.SoftMemoryLimit("", strings.TrimPrefix(env[2], operator.MemoryLimitEnv+"=")); err != nil || limit <= 0 {
		t.Fatalf("the operator reads no soft limit from %s: %d, %v", env[2], limit, err)
	}
}
