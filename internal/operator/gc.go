package operator

import (
	"fmt"
	"os"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/api/resource"
)

// DefaultGCPercent is the operator's GOGC unless the environment sets one. Go's
// default of 100 lets the heap grow to twice what is live before collecting;
// the operator's live heap is small and its allocation bursty (a strategy
// decoded, a rollout's status writes), so half that headroom keeps its resident
// memory within its budget for a little more collector CPU. (25 was measured at
// 3000 VMIs: no lower resident memory, half again as much operator CPU during an
// upgrade.)
const DefaultGCPercent = 50

// MemoryLimitEnv carries the container's memory limit (config/manager sets it
// from the downward API's limits.memory, in bytes). Go does not read cgroup
// limits, so without it the collector would let the heap reach the kernel's OOM
// kill before collecting harder.
const MemoryLimitEnv = "VIRT_OPERATOR_MEMORY_LIMIT"

// memoryLimitShare is the part of the container's limit given to Go's soft
// limit. The rest is what Go does not count: the binary's mapped text and data
// (most of the ~42 MB of resident memory the operator has before its cache
// fills) and the kernel's page cache charged to the container.
const memoryLimitShare = 0.8

// TuneGC sets DefaultGCPercent when GOGC is unset, and Go's soft memory limit
// from MemoryLimitEnv when GOMEMLIMIT is unset. It returns the percentage and
// the limit in force (math.MaxInt64: none).
func TuneGC() (gcPercent int, memoryLimit int64, err error) {
	gcPercent = DefaultGCPercent
	if os.Getenv("GOGC") != "" {
		gcPercent = debug.SetGCPercent(-1) // read it, then put it back
	}
	debug.SetGCPercent(gcPercent)
	limit, err := SoftMemoryLimit(os.Getenv("GOMEMLIMIT"), os.Getenv(MemoryLimitEnv))
	if err != nil {
		return gcPercent, debug.SetMemoryLimit(-1), err
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	return gcPercent, debug.SetMemoryLimit(-1), nil
}

// SoftMemoryLimit is the Go memory limit to set for a container limit (bytes,
// or a quantity such as 256Mi): memoryLimitShare of it. It is 0, set nothing,
// when GOMEMLIMIT is set (the runtime read it at start, and an admin's value
// wins) or the container has no limit.
func SoftMemoryLimit(gomemlimit, containerLimit string) (int64, error) {
	if gomemlimit != "" || containerLimit == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(containerLimit)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: not a memory size (bytes, or a quantity such as 256Mi): %v", MemoryLimitEnv, containerLimit, err)
	}
	bytes, ok := q.AsInt64()
	if !ok || bytes <= 0 {
		return 0, fmt.Errorf("%s=%q: a memory limit must be a positive number of bytes", MemoryLimitEnv, containerLimit)
	}
	return int64(float64(bytes) * memoryLimitShare), nil
}
