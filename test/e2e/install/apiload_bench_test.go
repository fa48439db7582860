package install_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
)

// controlPlaneLoad is one sample of what the sandbox's control plane has done
// so far: each component's CPU seconds, and kube-apiserver's request counters.
// Two samples make a window (loadWindow), which says how busy the API server
// was during a step: the way to tell the operator's share of a rollout from
// the rollout's own cost is to compare the same step with and without it.
type controlPlaneLoad struct {
	at           time.Time
	machine      float64            // the machine's busy CPU seconds, every process (/proc/stat)
	cpu          map[string]float64 // component name (state.json, env.loadPids) -> CPU seconds
	auditPos     int64              // the audit log's size: the operator's requests since
	byCommand    map[string]float64 // every process's CPU seconds by command name (/proc/*/stat)
	requests     map[string]float64 // apiserver_request_total by verb, WATCH and CONNECT aside
	latencySum   float64            // apiserver_request_duration_seconds, WATCH and CONNECT aside
	latencyCount float64
}

// loadWindow is the control plane's load between two samples.
type loadWindow struct{ from, to controlPlaneLoad }

// sampleLoad reads every sandbox component's CPU time (their pids from
// state.json) and kube-apiserver's /metrics with the admin's credentials.
func (e *env) sampleLoad(b testing.TB) controlPlaneLoad {
	s := controlPlaneLoad{at: time.Now(), cpu: map[string]float64{}, requests: map[string]float64{}}
	data, err := os.ReadFile(filepath.Join(e.sb.Dir, "state.json"))
	if err != nil {
		b.Fatal(err)
	}
	var st struct {
		Processes []struct {
			Name string `json:"name"`
			Pid  int    `json:"pid"`
		} `json:"processes"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		b.Fatalf("state.json: %v", err)
	}
	for _, p := range st.Processes {
		secs, _ := processCPUSeconds(p.Pid) // 0 once a component has exited
		s.cpu[p.Name] += secs
	}
	for name, pid := range e.loadPids {
		secs, _ := processCPUSeconds(pid)
		s.cpu[name] += secs
	}
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	if s.machine, err = machineBusySeconds(stat); err != nil {
		b.Fatal(err)
	}
	s.byCommand = cpuByCommand()
	if e.audit != "" {
		s.auditPos = fileSize(b, e.audit)
	}
	cs, err := kubernetes.NewForConfig(e.sb.RESTConfig())
	if err != nil {
		b.Fatal(err)
	}
	metrics, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatalf("kube-apiserver /metrics: %v", err)
	}
	s.addMetrics(metrics)
	return s
}

// addMetrics adds the request counters and latency sums of a Prometheus text
// exposition. Long-running verbs (WATCH, CONNECT) are left out: their
// "latency" is how long a watch stayed open.
func (s *controlPlaneLoad) addMetrics(text []byte) {
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		verb := labelValue(labels, "verb")
		if verb == "" || verb == "WATCH" || verb == "CONNECT" {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		switch name {
		case "apiserver_request_total":
			s.requests[verb] += v
		case "apiserver_request_duration_seconds_sum":
			s.latencySum += v
		case "apiserver_request_duration_seconds_count":
			s.latencyCount += v
		}
	}
}

// machineBusySeconds is the CPU time every core spent on anything but idling
// and waiting for I/O, from /proc/stat's first line ("cpu  user nice system
// idle iowait irq softirq steal ...", in USER_HZ ticks).
func machineBusySeconds(stat []byte) (float64, error) {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 6 || fields[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: first line %q is not the cpu total", line)
	}
	var busy float64
	for i, f := range fields[1:] {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %q: %w", f, err)
		}
		if i != 3 && i != 4 && i < 7 { // not idle, iowait, steal (another guest's), guest (counted in user)
			busy += v
		}
	}
	return busy / 100, nil
}

// cpuByCommand is the CPU seconds of every running process, summed by command
// name: what the named components leave of the machine's busy time. A process
// that started and ended between two samples is not in it.
func cpuByCommand() map[string]float64 {
	out := map[string]float64{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if command, secs, err := procStat(pid); err == nil { // an error: gone since the directory was read
			out[command] += secs
		}
	}
	return out
}

// labelValue is one label's value in a Prometheus label set.
func labelValue(labels, key string) string {
	for _, kv := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k == key {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// busiestCommands lists the processes, by command name, that used at least
// 0.02 cores during the window, most first; a process that started during
// the window is counted from 0.
func (w loadWindow) busiestCommands(secs float64) string {
	type use struct {
		command string
		cores   float64
	}
	var uses []use
	for command, cpu := range w.to.byCommand {
		if cores := (cpu - w.from.byCommand[command]) / secs; cores >= 0.02 {
			uses = append(uses, use{command, cores})
		}
	}
	if len(uses) == 0 {
		return "none"
	}
	sort.Slice(uses, func(i, j int) bool { return uses[i].cores > uses[j].cores })
	parts := make([]string, len(uses))
	for i, u := range uses {
		parts[i] = fmt.Sprintf("%s %.2f", u.command, u.cores)
	}
	return strings.Join(parts, ", ")
}

// mutatingVerbs are apiserver_request_total's write verbs.
var mutatingVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "DELETECOLLECTION": true, "APPLY": true}

// String says, per second of the window, each component's CPU (cores), the
// API server's requests and writes, and their mean latency.
func (w loadWindow) String() string {
	secs := w.to.at.Sub(w.from.at).Seconds()
	if secs <= 0 {
		return "no window"
	}
	names := make([]string, 0, len(w.to.cpu))
	for n := range w.to.cpu {
		names = append(names, n)
	}
	sort.Strings(names)
	var cpu []string
	for _, n := range names {
		cpu = append(cpu, fmt.Sprintf("%s %.2f", n, (w.to.cpu[n]-w.from.cpu[n])/secs))
	}
	var all, writes float64
	for verb, n := range w.to.requests {
		d := n - w.from.requests[verb]
		all += d
		if mutatingVerbs[verb] {
			writes += d
		}
	}
	latency := 0.0
	if n := w.to.latencyCount - w.from.latencyCount; n > 0 {
		latency = (w.to.latencySum - w.from.latencySum) / n * 1000
	}
	return fmt.Sprintf("%.0f s: CPU cores %s; the machine %.2f of %d busy (by command: %s); API server %.0f requests/s (%.0f writes/s), mean latency %.0f ms",
		secs, strings.Join(cpu, ", "), (w.to.machine-w.from.machine)/secs, runtime.NumCPU(), w.busiestCommands(secs), all/secs, writes/secs, latency)
}
