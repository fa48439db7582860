package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// CPUSeconds reads the CPU time (user and system, with that of the children
// each has waited for: the runner's host-executed pods) every component of the
// sandbox in DIR has used so far, by name. A component that is gone is left out.
// It is what a test reports of the cluster's cost, beside its wall time.
func CPUSeconds(dir string) (map[string]float64, error) {
	pids, err := Pids(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(pids))
	for name, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // exited
		}
		secs, err := statCPUSeconds(data)
		if err != nil {
			return nil, fmt.Errorf("%s (pid %d): %w", name, pid, err)
		}
		out[name] = secs
	}
	return out, nil
}

// statCPUSeconds reads a /proc/PID/stat line: "pid (command) state ...", where
// the command may hold spaces and parentheses; utime, stime, cutime and cstime
// are fields 14 to 17, in clock ticks (USER_HZ, 100 on Linux).
func statCPUSeconds(data []byte) (float64, error) {
	closing := bytes.LastIndexByte(data, ')')
	if closing < 0 {
		return 0, fmt.Errorf("/proc stat %.80q: no command", data)
	}
	fields := strings.Fields(string(data[closing+1:]))
	if len(fields) < 15 {
		return 0, fmt.Errorf("/proc stat %.80q: %d fields after the command", data, len(fields))
	}
	var ticks float64
	for _, f := range fields[11:15] {
		n, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat %.80q: %w", data, err)
		}
		ticks += n
	}
	return ticks / 100, nil
}
