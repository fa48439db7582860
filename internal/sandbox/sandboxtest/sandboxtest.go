// Package sandboxtest starts sandbox clusters for tests.
package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/virt-operator/virt-operator/internal/sandbox"
)

// startTimeout bounds one sandbox start on a slow, shared machine.
const startTimeout = 4 * time.Minute

// testGOGC is the host-executed programs' GOGC in tests: the sandbox
// components' (sandbox.componentGCPercent), for the same reason.
const testGOGC = "400"

// Start brings up a sandbox with nodes kwok nodes in a fresh temporary directory and
// stops it when the test ends. CRDDir defaults to <repo>/config/crd/bases; opts may
// change any option. Missing cluster binaries fail the test with how to build them.
// A test's API server sends its responses uncompressed (CPU the suite's wall time
// pays for, and no test's point), and a test's host-executed programs collect
// garbage at the components' GOGC (testGOGC); a benchmark's compresses them and
// runs the programs with their own default, as a real cluster does, so that
// what it measures is what a cluster costs.
func Start(t testing.TB, nodes int, opts ...func(*sandbox.Options)) *sandbox.Sandbox {
	t.Helper()
	_, bench := t.(*testing.B)
	o := sandbox.Options{
		Dir:                   t.TempDir(),
		Nodes:                 nodes,
		CRDDir:                filepath.Join(RepoRoot(), "config", "crd", "bases"),
		Log:                   t.Output(),
		UncompressedResponses: !bench,
	}
	if !bench {
		o.HostExecGOGC = testGOGC
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.BinDir == "" {
		dir, err := sandbox.DefaultBinDir()
		if err != nil {
			t.Fatal(err)
		}
		o.BinDir = dir
	}
	if err := sandbox.CheckBinaries(o.BinDir); err != nil {
		t.Fatal(err) // "cluster binaries missing in DIR: run make cluster-bins (missing: ...)"
	}
	if _, err := os.Stat(o.CRDDir); errors.Is(err, os.ErrNotExist) {
		o.CRDDir = "" // CRDs not generated yet: nothing to install
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	began := time.Now()
	s, err := sandbox.Up(ctx, o)
	if err != nil {
		t.Fatalf("starting sandbox: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logTails(t, s.Dir)
		}
		logCPU(t, s.Dir, time.Since(began))
		if err := s.Stop(); err != nil {
			t.Errorf("stopping sandbox: %v", err)
		}
	})
	return s
}

// RepoRoot is the directory of the nearest go.mod above the working directory (the
// repository root when run by go test); it panics if there is none.
func RepoRoot() string {
	root, err := sandbox.RepoRoot()
	if err != nil {
		panic(err)
	}
	return root
}

// logTails logs the end of every component log, so a failed test shows what the
// cluster did before its directory is removed.
func logTails(t testing.TB, dir string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		t.Logf("--- last lines of %s:\n%s", filepath.Base(l), strings.Join(lines, "\n"))
	}
}

// logCPU logs the CPU time each component of the sandbox used over its life
// (wall): what a test costs the machine, which its elapsed time alone hides
// on a shared one. A sandbox the test stopped itself has nothing to say.
func logCPU(t testing.TB, dir string, wall time.Duration) {
	cpu, err := sandbox.CPUSeconds(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return
	case err != nil:
		t.Logf("sandbox CPU: %v", err)
		return
	}
	names := make([]string, 0, len(cpu))
	total := 0.0
	for name, secs := range cpu {
		names = append(names, name)
		total += secs
	}
	sort.Slice(names, func(i, j int) bool { return cpu[names[i]] > cpu[names[j]] })
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s %.1fs", name, cpu[name])
	}
	t.Logf("sandbox CPU over %s: %.1fs (%s)", wall.Round(time.Second), total, strings.Join(parts, ", "))
}

// Pids is sandbox.Pids, failing the test on error.
func Pids(t testing.TB, dir string) map[string]int {
	t.Helper()
	pids, err := sandbox.Pids(dir)
	if err != nil {
		t.Fatal(err)
	}
	return pids
}

// Eventually polls cond every 200ms until it holds, failing the test with the
// last error after timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s (last error: %v)", what, timeout, lastErr)
}
