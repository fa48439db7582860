package install_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/history"
	"github.com/virt-operator/virt-operator/internal/rollout"
	"github.com/virt-operator/virt-operator/internal/sandbox"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
	"github.com/virt-operator/virt-operator/internal/sandbox/vmsim"
)

// The scale scenario's size and rest: SCALE_NODES, SCALE_VMS and SCALE_REST
// override them (a quick trial run); `make bench` runs the full scenario.
func scaleSize(b *testing.B) (nodes, vms int, rest time.Duration) {
	nodes, vms, rest = 1000, 10000, 10*time.Minute
	if s := os.Getenv("SCALE_REST"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("SCALE_REST=%q: %v", s, err)
		}
		rest = d
	}
	for env, v := range map[string]*int{"SCALE_NODES": &nodes, "SCALE_VMS": &vms} {
		if s := os.Getenv(env); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				b.Fatalf("%s=%q: want a positive count", env, s)
			}
			*v = n
		}
	}
	return nodes, vms, rest
}

// Each simulated migration takes scaleMigration; the drain's bound is the
// busiest node's VMI count times it (one migration out of a node at a time).
const scaleMigration = 10 * time.Second

// phase is one measured step of the scale scenario.
type phase struct {
	name            string
	took            time.Duration
	cpu             float64        // operator CPU seconds
	rssMiB, peakMiB float64        // at the phase's end
	requests        map[string]int // operator API requests by verb
	byResource      map[string]int // and by verb and resource
}

// BenchmarkScale1000 runs KubeVirt's lifecycle on 1000 kwok nodes with 10,000
// simulated VMIs, the operator as its own process under its ServiceAccount (the
// audit log holds only its requests). The VMIs are lean (sandbox.Options.LeanVMs:
// no launcher pods, which the operator reads only to evict, and this scenario
// live-migrates), spread evenly over the nodes, so the sandbox's throughput is
// not what the drain measures. Phases: install; the VMs created; virt-handler's
// own pod template rolled out as a plain DaemonSet at the fast step's 10% (the
// floor); the drain's floor (drainFloor: every VMI migrated once by a minimal
// driver); the upgrade to v1.9.0 (canary, bake, fast step); the workload drain
// against its bound and its floor; ten minutes at rest; the uninstall (RemoveWorkloads). Per
// phase: wall time, the operator's CPU seconds, resident and peak memory, and its
// API requests by verb. With BENCH_REPORT_DIR set it writes scale.md there for
// BENCHMARKS.md.
func BenchmarkScale1000(b *testing.B) {
	nodes, vms, rest := scaleSize(b)
	for range b.N {
		runScale(b, nodes, vms, rest)
	}
}

func runScale(b *testing.B, nodes, vms int, restFor time.Duration) {
	e := startEnvWithoutOperator(b, nodes, sandboxtest.WithMigrationDuration(scaleMigration), func(o *sandbox.Options) {
		o.AuditLog = filepath.Join(b.TempDir(), "audit.log")
		o.AuditUsers = []string{operatorUser}
		o.LeanVMs = true
	})
	kubeconfig := filepath.Join(b.TempDir(), "operator.kubeconfig")
	if err := e.sb.WriteKubeconfig(kubeconfig, sandboxtest.Token(b, e.c, namespace, "virt-operator")); err != nil {
		b.Fatal(err)
	}
	pprofAddr := sandboxtest.FreeAddr(b)
	p := &operatorProcess{t: b, kubeconfig: kubeconfig, args: []string{"--pprof-bind-address", pprofAddr}}
	p.start()
	defer p.kill()
	m := &scaleMeter{b: b, pid: p.cmd.Process.Pid, audit: e.audit, pprof: pprofAddr}
	e.loadPids = map[string]int{"virt-operator": p.cmd.Process.Pid, "benchmark": os.Getpid()}
	ctx := context.Background()

	m.begin()
	e.createKubeVirt(v1.KubeVirtSpec{
		ImageTag:          "v1.8.4",
		UninstallStrategy: v1.UninstallStrategyRemoveWorkloads,
		WorkloadUpdates:   &v1.WorkloadUpdatePolicy{Methods: []v1.WorkloadUpdateMethod{v1.WorkloadUpdateMethodLiveMigrate}},
	})
	first := e.waitAvailable(10 * time.Minute)
	m.end("install")

	m.begin()
	vc, err := vmsim.NewClient(e.sb.RESTConfig())
	if err != nil {
		b.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	var nodeList corev1.NodeList
	if err := e.c.List(ctx, &nodeList); err != nil {
		b.Fatal(err)
	}
	spread := make([]string, len(nodeList.Items))
	for i, n := range nodeList.Items {
		spread[i] = n.Name
	}
	names, err := vmsim.CreateVMs(cctx, vc, vmsim.CreateOptions{Namespace: vmNamespace, Count: vms, Workers: 32, Nodes: spread})
	if err == nil {
		err = vmsim.WaitRunning(cctx, vc, vmNamespace, names, launcherImage(first))
	}
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	e.eventually("every VMI counted up to date", 5*time.Minute, func() (bool, error) { return outdated(e.kubeVirt()) == 0, nil })
	m.end(fmt.Sprintf("%d VMs created and Running", vms))

	m.begin()
	floor, floorLoad := e.handlerTemplateUpdate(b)
	m.end("floor: virt-handler's template as a plain DaemonSet (not the operator)")

	m.begin()
	floorDrainLoad := loadWindow{from: e.sampleLoad(b)}
	profiled := m.cpuProfile("drain-floor", max(5, vms/200)) // what the operator does while others migrate
	floorDrain, floorBusiest := e.drainFloor(b)
	floorDrainLoad.to = e.sampleLoad(b)
	profiled()
	m.end("drain floor: every VMI migrated once by a minimal driver (not the operator)")

	migs := e.followMigrations()
	nodeOf, busiest := e.vmiNodes()
	migs.setNodes(nodeOf)
	m.begin()
	start := time.Now()
	e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.9.0" })
	var upgraded time.Time
	var fastStep loadWindow // the control plane's load while the fast step runs
	profiled = func() {}    // waits for the operator's CPU profile of the fast step
	e.eventually("observed == target", 20*time.Minute, func() (bool, error) {
		kv := e.kubeVirt()
		upgraded = time.Now()
		done := kv.Status.ObservedDeploymentID != first.Status.ObservedDeploymentID && kv.Status.ObservedDeploymentID == kv.Status.TargetDeploymentID
		inFastStep := !done && currentStage(kv) == history.StageHandlerRollout
		switch {
		case fastStep.from.at.IsZero() && inFastStep:
			fastStep.from = e.sampleLoad(b)
			profiled = m.cpuProfile("fast-step", max(5, nodes/20)) // the step takes about nodes/12 s here
		case !fastStep.from.at.IsZero() && fastStep.to.at.IsZero() && !inFastStep:
			fastStep.to = e.sampleLoad(b)
		}
		return done, nil
	})
	upgrade := upgraded.Sub(start)
	profiled()
	m.end("upgrade to v1.9.0 (canary, bake, fast step)")
	m.stages = deploymentStages(e.kubeVirt())
	m.notes = append(m.notes,
		fmt.Sprintf("The fast step's control plane, from the stage's start to its end as the CR's history shows them (sampled at 200 ms): %s; "+
			"the operator's requests in it: %s.", fastStep, m.requestsIn(fastStep)),
		fmt.Sprintf("The floor's control plane (the same template as a plain DaemonSet, the operator idle): %s; "+
			"the operator's requests in it: %s.", floorLoad, m.requestsIn(floorLoad)))

	m.begin()
	drainLoad := loadWindow{from: e.sampleLoad(b)}
	e.eventually("every VMI moved", 30*time.Minute, func() (bool, error) { return outdated(e.kubeVirt()) == 0, nil })
	drainLoad.to = e.sampleLoad(b)
	drain := time.Since(upgraded)
	m.end(fmt.Sprintf("workload drain of %d VMIs", vms))
	drainWrites := float64(writes(m.phases[len(m.phases)-1].requests)) / float64(max(migs.total(), 1))
	m.heapProfile("drained")

	m.begin()
	time.Sleep(restFor)
	m.end(fmt.Sprintf("at rest (%s)", restFor))
	m.heapProfile("rested")

	snapshot := e.snapshotForUninstall(b)
	recreated := e.vmiCreations(b)
	m.begin()
	profiled = m.cpuProfile("uninstall", max(5, vms/200)) // the CRDs' deletion takes about vms/100 s here
	if err := e.c.Delete(ctx, e.kubeVirt()); err != nil {
		b.Fatal(err)
	}
	var crdsGone time.Duration // from the CR's deletion to the last managed CRD gone
	crdDeletions := newCRDDeletions(m.start)
	e.eventually("the CR gone", 20*time.Minute, func() (bool, error) {
		if crdsGone == 0 && crdDeletions.observe(e.managedCRDs(b), time.Now()) {
			crdsGone = time.Since(m.start)
		}
		err := e.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "kubevirt"}, &v1.KubeVirt{})
		return err != nil && client.IgnoreNotFound(err) == nil, nil
	})
	m.end("uninstall (RemoveWorkloads)")
	uninstall := m.phases[len(m.phases)-1].took
	profiled()
	vmisRecreated := recreated()

	m.begin()
	floorDeletions, floorNudges := e.uninstallFloor(b, snapshot)
	uninstallFloor := floorDeletions.took()
	m.end(fmt.Sprintf("uninstall floor: copies of its CRDs and objects deleted by the API server alone (not the operator); %s", snapshot))

	bake := rollout.DefaultBakeTime
	bound := time.Duration(busiest) * scaleMigration
	rest := m.phases[len(m.phases)-3]
	b.ReportMetric(m.phases[0].took.Seconds(), "install-s")
	b.ReportMetric(upgrade.Seconds(), "upgrade-s")
	b.ReportMetric(floor.Seconds(), "floor-s")
	b.ReportMetric((upgrade-bake).Seconds()/floor.Seconds(), "upgrade-less-bake-ratio")
	b.ReportMetric(drain.Seconds(), "drain-s")
	b.ReportMetric(bound.Seconds(), "drain-bound-s")
	b.ReportMetric(drain.Seconds()/bound.Seconds(), "drain-ratio")
	floorRatio := drainFloorRatio(drain, busiest, floorDrain, floorBusiest)
	b.ReportMetric(floorDrain.Seconds(), "drain-floor-s")
	b.ReportMetric(floorRatio, "drain-floor-ratio")
	// The same VMIs migrated once each, whole against whole: when the sandbox's
	// migrations per second pace both drains, not their busiest nodes (which
	// differ: the floor moves VMIs before the operator's drain starts).
	totalRatio := drainFloorRatio(drain, 1, floorDrain, 1)
	b.ReportMetric(totalRatio, "drain-floor-total-ratio")
	b.ReportMetric(drainWrites, "drain-writes-per-migration")
	m.notes = append(m.notes, fmt.Sprintf("Drain floor (a minimal driver, same pacing, before the upgrade): %s for a busiest node of %d VMIs; "+
		"the operator's drain per busiest-node VMI against the floor's: **%.2f×**, the whole drain against the whole floor: **%.2f×**; "+
		"the operator's API writes per migration: %.2f.",
		floorDrain.Round(100*time.Millisecond), floorBusiest, floorRatio, totalRatio, drainWrites),
		fmt.Sprintf("The drain floor's control plane (the operator only watching): %s; the operator's requests in it: %s.", floorDrainLoad, m.requestsIn(floorDrainLoad)),
		fmt.Sprintf("The operator's drain's control plane (after the upgrade): %s; the operator's requests in it: %s.", drainLoad, m.requestsIn(drainLoad)))
	b.ReportMetric(float64(migs.maxParallel), "max-parallel")
	b.ReportMetric(float64(migs.perNodeMax()), "max-per-node")
	b.ReportMetric(uninstall.Seconds(), "uninstall-s")
	b.ReportMetric(uninstallFloor.Seconds(), "uninstall-floor-s")
	b.ReportMetric(uninstall.Seconds()/uninstallFloor.Seconds(), "uninstall-floor-ratio")
	m.notes = append(m.notes, fmt.Sprintf("Uninstall %s against its floor %s (the API server alone deleting copies of the same CRDs holding as many objects of the same content, every CRD at once): **%.2f×**; "+
		"of the uninstall, %s until the last CRD was gone (the operator deletes the CRDs first and waits for the API server to delete their objects), %s for the rest (every other object, then the CR); "+
		"VMIs created during the uninstall (the simulated virt-controller starting VMs' VMIs again until the VMs are gone): %d; CRDs whose clean-up the floor had to restart: %d. "+
		"The slowest CRDs, from the CR's deletion: %s; in the floor, from its deletes: %s.",
		uninstall.Round(100*time.Millisecond), uninstallFloor.Round(100*time.Millisecond), uninstall.Seconds()/uninstallFloor.Seconds(),
		crdsGone.Round(100*time.Millisecond), (uninstall-crdsGone).Round(100*time.Millisecond), vmisRecreated, floorNudges,
		crdDeletions.slowest(3), floorDeletions.slowest(3)))
	b.ReportMetric(float64(vmisRecreated), "uninstall-vmis-recreated")
	b.ReportMetric(rest.rssMiB, "settled-rss-MiB")
	b.ReportMetric(rest.peakMiB, "peak-rss-MiB")
	b.ReportMetric(float64(writes(rest.requests)), "writes-at-rest")
	m.report(nodes, vms, upgrade, floor, bake, drain, bound, busiest)
}

// scaleMeter measures the operator process per phase.
type scaleMeter struct {
	b        *testing.B
	pid      int
	audit    string
	pprof    string // the operator's /debug/pprof address
	stages   string // the upgrade's stages, from the CR's history
	notes    []string
	phases   []phase
	start    time.Time
	cpu      float64
	auditPos int64
}

func (m *scaleMeter) begin() {
	m.start = time.Now()
	m.cpu = cpuSeconds(m.b, m.pid)
	m.auditPos = fileSize(m.b, m.audit)
}

func (m *scaleMeter) end(name string) {
	p := phase{name: name, took: time.Since(m.start), cpu: cpuSeconds(m.b, m.pid) - m.cpu,
		rssMiB: procStatusMiB(m.b, m.pid, "VmRSS"), peakMiB: procStatusMiB(m.b, m.pid, "VmHWM"),
		requests:   requestsByVerb(m.b, m.audit, m.auditPos),
		byResource: requestsBy(m.b, m.audit, m.auditPos, -1, verbAndResource)}
	m.phases = append(m.phases, p)
	m.b.Logf("%s: %s, operator CPU %.1f s, RSS %.0f MiB (peak %.0f), requests %v", name, p.took.Round(100*time.Millisecond), p.cpu, p.rssMiB, p.peakMiB, p.requests)
}

// heapProfile saves the operator's heap profile in $BENCH_REPORT_DIR as
// scale-heap-NAME.pprof (`go tool pprof -top` reads it) and as text with the
// runtime's MemStats (scale-heap-NAME.txt: heap in use, idle, released, stacks),
// which tell the RSS apart from the live heap.
func (m *scaleMeter) heapProfile(name string) {
	dir := os.Getenv("BENCH_REPORT_DIR")
	if dir == "" {
		return
	}
	for query, file := range map[string]string{"": "scale-heap-" + name + ".pprof", "?debug=1": "scale-heap-" + name + ".txt"} {
		data := m.get("/debug/pprof/heap" + query)
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			m.b.Fatal(err)
		}
	}
}

// cpuProfile starts taking the operator's CPU profile for secs seconds into
// $BENCH_REPORT_DIR/scale-cpu-NAME.pprof (`go tool pprof -top` reads it); the
// returned func waits for it.
func (m *scaleMeter) cpuProfile(name string, secs int) (wait func()) {
	dir := os.Getenv("BENCH_REPORT_DIR")
	if dir == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", m.pprof, secs))
		if err != nil {
			m.b.Errorf("CPU profile %s: %v", name, err)
			return
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode == http.StatusOK {
			err = os.WriteFile(filepath.Join(dir, "scale-cpu-"+name+".pprof"), data, 0o644)
		}
		if err != nil || resp.StatusCode != http.StatusOK {
			m.b.Errorf("CPU profile %s: %s %v", name, resp.Status, err)
		}
	}()
	return func() { <-done }
}

func (m *scaleMeter) get(path string) []byte {
	resp, err := http.Get("http://" + m.pprof + path)
	if err != nil {
		m.b.Fatalf("%s: %v", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		m.b.Fatalf("%s: %s %v", path, resp.Status, err)
	}
	return data
}

// report writes scale.md into $BENCH_REPORT_DIR.
func (m *scaleMeter) report(nodes, vms int, upgrade, floor, bake, drain, bound time.Duration, busiest int) {
	dir := os.Getenv("BENCH_REPORT_DIR")
	if dir == "" {
		return
	}
	var s strings.Builder
	fmt.Fprintf(&s, "### %d nodes, %d VMIs (BenchmarkScale1000)\n\n", nodes, vms)
	fmt.Fprintf(&s, "| Phase | Wall | Operator CPU | RSS at end | Peak RSS | Operator API requests |\n|---|---|---|---|---|---|\n")
	for _, p := range m.phases {
		fmt.Fprintf(&s, "| %s | %s | %.1f s | %.0f MiB | %.0f MiB | %s |\n", p.name, p.took.Round(100*time.Millisecond), p.cpu, p.rssMiB, p.peakMiB, verbs(p.requests))
	}
	fmt.Fprintf(&s, "\nUpgrade %s less the %s bake against the floor %s: **%.2f×**. Drain %s against its bound %s (busiest node %d VMIs × %s): **%.2f×**.\n",
		upgrade.Round(100*time.Millisecond), bake, floor.Round(100*time.Millisecond), (upgrade-bake).Seconds()/floor.Seconds(),
		drain.Round(100*time.Millisecond), bound, busiest, scaleMigration, drain.Seconds()/bound.Seconds())
	for _, n := range m.notes {
		fmt.Fprintf(&s, "\n%s\n", n)
	}
	fmt.Fprintf(&s, "\nThe upgrade's stages (status.history, whole seconds): %s.\n", m.stages)
	fmt.Fprintf(&s, "\nThe operator's API requests per phase by verb and resource (leases aside):\n\n")
	for _, p := range m.phases {
		for k := range p.byResource {
			if strings.HasSuffix(k, " leases") {
				delete(p.byResource, k)
			}
		}
		fmt.Fprintf(&s, "- %s: %s\n", p.name, verbs(p.byResource))
	}
	if err := os.WriteFile(filepath.Join(dir, "scale.md"), []byte(s.String()), 0o644); err != nil {
		m.b.Fatal(err)
	}
}

// deploymentStages lists the newest deployment's stages with their seconds.
func deploymentStages(kv *v1.KubeVirt) string {
	if len(kv.Status.History) == 0 {
		return "none recorded"
	}
	var parts []string
	for _, p := range kv.Status.History[0].Phases {
		took := "running"
		if p.Seconds != nil {
			took = fmt.Sprintf("%d s", *p.Seconds)
		}
		parts = append(parts, p.Name+" "+took)
	}
	return strings.Join(parts, ", ")
}

// reportStages reports each stage of kv's last deployment, as its history
// records it (whole seconds), as the metric stage-<name>-s: what the serial
// stages around the fast step cost, in every run.
func reportStages(b *testing.B, kv *v1.KubeVirt) {
	if len(kv.Status.History) == 0 {
		return
	}
	for _, p := range kv.Status.History[0].Phases {
		if p.Seconds != nil {
			b.ReportMetric(float64(*p.Seconds), "stage-"+p.Name+"-s")
		}
	}
}

// verbs renders counts as "key n" items in key order.
func verbs(counts map[string]int) string {
	return countList(counts, func(a, b string) bool { return a < b })
}

// writes counts the write requests, leases aside (leader election renews them).
func writes(counts map[string]int) int {
	n := 0
	for k, v := range counts {
		verb, resource, _ := strings.Cut(k, " ")
		if writeVerbs[verb] && resource != "leases" {
			n += v
		}
	}
	return n
}

// requestsIn lists the operator's requests during a load window by verb and
// resource, most first.
func (m *scaleMeter) requestsIn(w loadWindow) string {
	if m.audit == "" || w.to.auditPos <= w.from.auditPos {
		return "none"
	}
	return mostFirst(requestsBy(m.b, m.audit, w.from.auditPos, w.to.auditPos, verbAndResource))
}

// mostFirst renders counts as "key n" items, the largest first.
func mostFirst(counts map[string]int) string {
	return countList(counts, func(a, b string) bool {
		if counts[a] != counts[b] {
			return counts[a] > counts[b]
		}
		return a < b
	})
}

// countList renders counts as "key n" items in the order less gives, "none"
// for none.
func countList(counts map[string]int, less func(a, b string) bool) string {
	if len(counts) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return less(keys[i], keys[j]) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}

// requestsByVerb counts the operator's requests in the audit log after offset,
// by "verb resource" for leases (the renewals at rest) and by verb otherwise.
func requestsByVerb(b *testing.B, path string, offset int64) map[string]int {
	return requestsBy(b, path, offset, -1, func(ev auditEvent) string {
		if ev.ObjectRef.Resource == "leases" {
			return ev.Verb + " leases"
		}
		return ev.Verb
	})
}

// requestsBy counts the operator's requests in the audit log between byte
// offsets from and to (-1: its end) by key.
func requestsBy(b *testing.B, path string, from, to int64, key func(auditEvent) string) map[string]int {
	out := map[string]int{}
	readAuditRange(b, path, from, to, func(ev auditEvent) {
		if ev.User.Username == operatorUser {
			out[key(ev)]++
		}
	})
	return out
}

// verbAndResource keys a request by its verb and auditResource.
func verbAndResource(ev auditEvent) string { return ev.Verb + " " + auditResource(ev) }

// auditResource is an event's resource with its subresource (kubevirts/status),
// or, for a request that names no resource (discovery, /version), its path.
func auditResource(ev auditEvent) string {
	if ev.ObjectRef.Resource == "" {
		path, _, _ := strings.Cut(ev.RequestURI, "?")
		return "(path " + path + ")"
	}
	r := ev.ObjectRef.Resource
	if ev.ObjectRef.Subresource != "" {
		r += "/" + ev.ObjectRef.Subresource
	}
	if ev.Verb == "watch" && strings.Contains(ev.RequestURI, "sendInitialEvents=true") {
		r += " (with its initial list)" // a watch-list: the informer's list streamed as a watch
	}
	return r
}

// currentStage is the stage the newest deployment in the CR's history is in,
// "" once every stage has ended.
func currentStage(kv *v1.KubeVirt) string {
	if len(kv.Status.History) == 0 {
		return ""
	}
	phases := kv.Status.History[0].Phases
	if len(phases) == 0 || phases[len(phases)-1].Seconds != nil {
		return ""
	}
	return phases[len(phases)-1].Name
}

// procStatusMiB is a /proc/PID/status memory field (VmRSS, VmHWM) in MiB.
func procStatusMiB(b *testing.B, pid int, field string) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				b.Fatal(err)
			}
			return float64(kb) / 1024
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
