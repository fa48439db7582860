// Command benchmd renders BENCHMARKS.md from `make bench`'s outputs: the Go
// benchmark lines of the pure code and of the sandbox scenarios (3 nodes, 200
// nodes, 1000 VMIs on 20 nodes, 1000 nodes with 10,000 VMIs), and the scale
// scenario's per-phase table (scale.md) with the operator's heap by owner from
// the heap profiles saved beside it (heap.go).
//
// Usage: go run ./hack/benchmd -out BENCHMARKS.md unit.txt e2e.txt [scale.md]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// result is one benchmark line: its name and its metrics in order.
type result struct {
	name    string
	metrics [][2]string // value, unit
}

// parse reads the "BenchmarkX-N  iterations  value unit  value unit ..." lines.
func parse(r io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") || len(fields)%2 != 0 {
			continue
		}
		res := result{name: strings.TrimPrefix(fields[0], "Benchmark")}
		if i := strings.LastIndexByte(res.name, '-'); i > 0 {
			res.name = res.name[:i] // the GOMAXPROCS suffix
		}
		for i := 2; i+1 < len(fields); i += 2 {
			res.metrics = append(res.metrics, [2]string{fields[i], fields[i+1]})
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

func render(w io.Writer, unit, e2e []result, scale string, when time.Time) {
	fmt.Fprintf(w, "# Benchmarks\n\nProduced by `make bench` on %s (%d cores, %s/%s), %s. Figures of one run; on\nthis small machine ratios say more than seconds. Regenerate with `make bench`.\n\n",
		hostname(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, when.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "## The operator on a sandbox (kwok nodes, the VM simulator)\n\n")
	for _, r := range e2e {
		table(w, r)
	}
	if scale != "" {
		fmt.Fprintf(w, "%s\n", strings.TrimSpace(scale))
	}
	fmt.Fprintf(w, "\n## The pure code (go test -bench ./internal/...)\n\n| Benchmark | Figures |\n|---|---|\n")
	for _, r := range unit {
		parts := make([]string, len(r.metrics))
		for i, m := range r.metrics {
			parts[i] = m[0] + " " + m[1]
		}
		fmt.Fprintf(w, "| %s | %s |\n", r.name, strings.Join(parts, ", "))
	}
}

func table(w io.Writer, r result) {
	fmt.Fprintf(w, "### %s\n\n| Metric | Value |\n|---|---|\n", r.name)
	for _, m := range r.metrics {
		if m[1] == "ns/op" {
			continue // one iteration: the sum of the others
		}
		fmt.Fprintf(w, "| %s | %s |\n", m[1], m[0])
	}
	fmt.Fprintln(w)
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "this machine"
	}
	return h
}

func main() {
	out := flag.String("out", "BENCHMARKS.md", "file to write")
	flag.Parse()
	args := flag.Args()
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchmd -out FILE UNIT.txt E2E.txt [SCALE.md]")
		os.Exit(2)
	}
	var sets [2][]result
	for i := range sets {
		f, err := os.Open(args[i])
		if err == nil {
			sets[i], err = parse(f)
			_ = f.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchmd:", err)
			os.Exit(1)
		}
	}
	scale := ""
	if len(args) > 2 {
		raw, err := os.ReadFile(args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchmd:", err)
			os.Exit(1)
		}
		scale = string(raw)
		heap, err := heapSection(filepath.Dir(args[2]))
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchmd:", err)
			os.Exit(1)
		}
		if heap != "" {
			scale += "\n\n" + heap
		}
	}
	var b strings.Builder
	render(&b, sets[0], sets[1], scale, time.Now())
	if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "benchmd:", err)
		os.Exit(1)
	}
}
