// Package sandbox owns the throw-away Kubernetes control plane that the operator's
// e2e tests, benchmarks and the virt-sandbox command run against: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler as host processes, plus kwok simulating
// nodes and pods, so hundreds of "nodes" fit on a two-core machine.
//
// Design choices:
//
//   - Processes are started detached (own process group, output to DIR/logs/NAME.log)
//     and their pids are recorded in DIR/state.json as each one starts, so the CLI can
//     exit leaving the cluster running and Down can clean up even a half-started sandbox.
//     Down waits for every pid to be gone (SIGKILL after a grace period): kube-apiserver
//     shuts down slowly and would otherwise keep its port while the next sandbox starts.
//   - Every port is picked at runtime on 127.0.0.1, so several sandboxes can run at once.
//     A port is free when picked and may be taken before etcd or kube-apiserver binds
//     it (an outgoing connection draws from the same range): a start that lost one is
//     made again on new ports, three starts at most (onFreshPorts).
//   - Certificates, the service-account key pair, a static admin token (group
//     system:masters) and the kubeconfig are generated in Go; every component uses the
//     same admin kubeconfig. Authorization is RBAC only: there is no kubelet to authorize.
//   - kube-apiserver runs with TaintNodesByCondition disabled and kube-controller-manager
//     without the nodeipam and nodelifecycle controllers: otherwise new nodes carry the
//     not-ready taint until the lifecycle controller removes it, and at hundreds of nodes
//     late heartbeats make it mark pods NotReady, which kwok never undoes. Without that
//     controller nothing reads node leases, so kwok does not maintain them.
//   - ValidatingAdmissionWebhook and MutatingAdmissionWebhook are disabled. The operator
//     installs webhook configurations pointing at virt-api, whose pods never really run
//     on kwok nodes; with failurePolicy Fail every matching request would be refused.
//     With the plugins off the configurations are still created and can be inspected,
//     but are never called. APIServices pointing at virt-api are left as they are:
//     while KubeVirt is installed they report Available=False and deleting a namespace
//     hangs on stale discovery. The sandbox accepts that rather than faking virt-api on
//     the host: its tests delete no namespace while KubeVirt is installed, and the
//     operator's uninstall removes the APIServices, after which namespace deletion works
//     again (the install e2e test checks it).
//   - kwok runs with an embedded stage set (stages.yaml): kwok's node/fast,
//     node/heartbeat-with-lease and pod/fast stages plus a crash-loop stage. A pod with
//     any container image ending in "-crashloop" turns Running and Ready like any other
//     pod, and about 2 s later its containers report CrashLoopBackOff with Ready=False;
//     the stage fires again every ~2 s raising restartCount, as a real crash loop does.
//     A pod with an image ending in "-nopull" never pulls it: it stays Pending, that
//     container waiting with ErrImagePull (the preflight's image check sees a bad tag).
//     Pods owned by Jobs are completed (Succeeded) by pod/fast's pod-complete stage,
//     except host-executed ones (below).
//   - Nodes are plain Node objects (cpu 32, memory 256Gi, pods 110, labels
//     kubernetes.io/hostname, kubernetes.io/os=linux, kubernetes.io/arch=amd64 and
//     type=kwok, a distinct podCIDR each) that kwok marks Ready. Up also runs a probe pod
//     (scheduled, made Ready by kwok, deleted) to prove kube-scheduler and kwok work.
//   - kube-controller-manager and kube-scheduler get 200 QPS towards the apiserver
//     instead of 20/50, so DaemonSets of hundreds of pods are not throttled by them.
//     RESTConfig keeps client-go's defaults, so an operator under test is throttled
//     as it would be in a real cluster.
//   - Every component runs with GOGC=400 unless the environment sets GOGC: the
//     collector was half of an e2e test's CPU at Go's default (kube-apiserver churns
//     through the KubeVirt CRDs' schemas on every CRD write), and a throw-away
//     cluster on two cores wants the CPU more than the memory. The operator itself
//     (make run, the host-executed strategy Jobs) keeps its own setting, unless
//     Options.HostExecGOGC gives the host-executed programs one (tests do).
//   - etcd runs with --unsafe-no-fsync: the data is thrown away with the sandbox and
//     fsync latency on a shared disk would slow every write.
//
// Host-executed pods (package hostexec). kwok runs no containers, but the operator's
// install-strategy Job must really run its image. A pod labelled
// sandbox.virt-operator.io/host-exec=true, or matching Options.HostExecSelectors
// (default kubevirt.io=virt-operator-strategy-dumper, the install-strategy pods), is
// executed on the host:
//
//   - kube-scheduler binds it as any pod, but kwok leaves it alone: the pod-ready,
//     pod-complete and pod-crashloop stages carry a last selector key, the jq
//     expression of hostexec.Matcher.StageExpression, NotIn ['true']. stages.yaml
//     spells out the default expression; Up substitutes the one of
//     Options.HostExecSelectors. kwok's pod-delete stage still deletes such pods.
//   - A runner, `virt-sandbox hostexec` (a hidden subcommand of the sandbox's own
//     binary), is a sixth background process, "hostexec" in state.json, so Down stops
//     it (with the API clients, before kube-apiserver). Up fails naming it if it
//     exits or does not write DIR/hostexec.ready (informers synced) in time.
//   - The runner marks the pod Running, runs the container's args with the
//     virt-operator binary (other images can map to other host programs) and the
//     pod's env plus KUBECONFIG=DIR/kubeconfig, logs to DIR/logs/hostexec-NS-POD.log,
//     and marks the pod Succeeded or Failed (exit code; last stderr line as the
//     terminated message). kube-controller-manager's Job controller then completes or
//     fails the Job. A pod is never run twice; a runner that finds a Running pod it
//     did not start fails it ("runner restarted").
//   - Two binaries are involved, kept apart so the operator's links none of the
//     sandbox: Options.SandboxBinary runs the runner (and the VM simulator), by
//     default this executable when it is named virt-sandbox (`virt-sandbox up/run`);
//     Options.OperatorBinary runs the pods of the operator's image, by default a
//     virt-operator beside the sandbox binary (`make build` puts both in bin/). A
//     test binary calling Up passes both (sandboxtest.WithHostExec builds them);
//     without both no runner starts and host-executed pods stay Pending. Up
//     hard-links (or copies) them to DIR/bin/virt-sandbox and DIR/bin/virt-operator,
//     so `go run` deleting its binary or a rebuild does not change what a running
//     sandbox executes.
//
// Simulated VMs (package vmsim). Nothing runs QEMU, so the operator's workload
// updater meets a stand-in for virt-controller and virt-handler:
//
//   - `virt-sandbox vmsim` (hidden, the sandbox binary) is a seventh background
//     process, "vmsim" in state.json, started whenever the sandbox binary is known
//     (Options.SandboxBinary) unless Options.NoVMSim (KubeVirt's own virt-controller
//     then stands in); Up installs the VM kinds' CRDs from the default release's
//     install strategy for it, so VMs exist before and without a KubeVirt install.
//     Down stops it with the other API clients. Up waits for DIR/vmsim.ready
//     (written once its caches synced) and names it, with its log's tail, if it
//     exits or is late. As KubeVirt's own components do, it writes VMI status
//     through the main resource (the VMI CRD has no status subresource).
//   - Each VMI gets a launcher pod (virt-launcher-<vmi>-xxxxx, labels kubevirt.io=
//     virt-launcher, kubevirt.io/created-by, vm.kubevirt.io/name; node selector
//     type=kwok; no host-exec label) with the launcher image from the --launcher-image
//     argument of a Deployment labelled kubevirt.io=virt-controller, or
//     quay.io/kubevirt/virt-launcher:sandbox while there is none. Once kwok runs the
//     pod the VMI is Running with nodeName, launcherContainerImageVersion, activePods
//     and Ready/LiveMigratable conditions (LiveMigratable=False, NotMigratable, for a
//     VMI labelled sandbox.virt-operator.io/non-migratable=true).
//   - A migration gets a target pod with the current launcher image, steps through
//     Scheduling..Running and ends Options.MigrationDuration (virt-sandbox up/run
//     --migration-duration, default 1s) after the simulator first saw it, writing the
//     VMI (target node, image, activePods, migrationState completed) before the
//     migration (Succeeded) and deleting the source pod last. The annotation
//     sandbox.virt-operator.io/fail-migrations="N" on a VMI fails its next N
//     migrations at their end time (counted down, removed at 0); the VMI stays on its
//     source. sandbox.virt-operator.io/hold="true" on a migration keeps it Running
//     until the annotation goes. Deleting an unfinished migration aborts it.
//   - Evicting (or deleting) the pod of a Running VMI makes it Succeeded; a VM with
//     runStrategy Always (or running: true) then gets a new VMI from its template,
//     hence a launcher pod with the current image. `virt-sandbox vms create` (and
//     vmsim.CreateVMs) creates VMs and their VMIs in bulk.
//   - Options.LeanVMs (the 10,000-VMI benchmark) runs VMIs without launcher pods
//     and skips transitional phases: a VMI goes Running at once, a migration is two
//     writes of the VMI and two of the migration; virt-controller's workload updater
//     plans at most once a second. Pods are most of a VM's cost to
//     the sandbox and the operator reads launcher pods only to evict them; with no
//     pods there are no evictions.
package sandbox
