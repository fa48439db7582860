// Package vmsim owns the sandbox's stand-in for virt-controller and virt-handler:
// nothing runs QEMU on kwok nodes, so it moves VirtualMachines,
// VirtualMachineInstances (VMIs) and VirtualMachineInstanceMigrations through their
// lifecycle the way KubeVirt would, for the operator's workload updater to act on.
//
// Core and shell: planVMI, planMigration and planVM are pure functions from the
// observed objects to a plan (pods to create or delete, statuses to write), table
// tested without a cluster; the controller-runtime controllers around them only
// read caches and carry plans out. Every decision is derived from the API objects,
// so a restarted simulator resumes where it stopped and never runs a migration
// twice: launcher pod names are derived from the owning UID (an AlreadyExists
// instead of a second pod), and the bookkeeping lives in annotations.
//
// Launcher pods. A VMI without one gets virt-launcher-<vmi>-<5 chars> (labels
// kubevirt.io=virt-launcher, kubevirt.io/created-by=<VMI UID>,
// vm.kubevirt.io/name=<VMI>, controlled by the VMI, one container "compute") with
// the current launcher image: the --launcher-image argument of a Deployment
// labelled kubevirt.io=virt-controller (watched, so an upgrade's image is used at
// once), else Options.LauncherImage. kube-scheduler binds it to a kwok node and kwok
// makes it Running. The VMI goes Scheduling, Scheduled, then Running with nodeName,
// launcherContainerImageVersion (the pod's compute image), activePods and the
// conditions Ready=True and LiveMigratable=True, or LiveMigratable=False reason
// NotMigratable when it is labelled NonMigratableLabel=true.
//
// Migrations. A migration of a Running, migratable VMI gets a target pod with the
// current launcher image (plus kubevirt.io/migrationJobUID) preferring another node,
// and steps one phase per write through Scheduling, Scheduled, PreparingTarget,
// TargetReady and Running; at Scheduled the VMI's migrationState names the source
// and target. It finishes Options.MigrationDuration after its start, the moment
// the simulator first acted on it (creationTimestamp has whole seconds only, so the
// start is recorded on the target pod), without sleeping. Success writes the VMI
// first (target node, target image, activePods = the target pod, migrationState
// completed), then the migration (Succeeded), then deletes the source pod. A VMI
// annotated FailMigrationsAnnotation="N" fails its next N migrations at their end
// time: migrationState failed and completed, the migration Failed, the target pod
// deleted, the VMI still on its source pod and image; the count goes down by one
// per failure and the annotation is removed at 0. A migration annotated
// HoldMigrationAnnotation="true" stays Running past its end time until the
// annotation goes, then ends as it would have. A migration of a missing, not
// Running or non-migratable VMI fails at once; one of a VMI already migrating waits
// Pending. A migration deleted before it finished is an abort: its target pod is
// deleted and the VMI's unfinished migrationState for it cleared. A Succeeded or
// Failed migration is left alone.
//
// Evictions and VMs. When the pod a Running VMI is active in is deleted (the
// operator evicts it with the Eviction API) the VMI goes Succeeded: its guest shut
// down. A VM with runStrategy Always (or spec.running true) whose VMI finished
// gets it deleted and then a new one from its template (named like the VM,
// controlled by it, the template's labels and annotations), which gets a launcher
// pod with the current image; RerunOnFailure restarts Failed VMIs only, Halted
// deletes the VMI. The VM's status says Starting, Running (ready) or Stopped.
//
// virt-controller's workload updater. As on a real cluster, virt-controller
// moves outdated VMs when the KubeVirt CR's spec.workloadUpdateStrategy lists
// methods, and writes status.outdatedVirtualMachineInstanceWorkloads whenever the
// CR is Deployed with observed == target; the simulator plays that plainly, with
// upstream's settings (parallelMigrationsPerCluster, default 5; batches of
// batchEvictionSize per batchEvictionInterval; no per-node cap, no backoff),
// reusing the operator's planner. It starts once the KubeVirt CRD is served.
//
// Placement: a VMI annotated NodeAnnotation="NAME" gets its first launcher pod
// on node NAME, so tests can pack VMIs unevenly; migration targets go anywhere
// their addedNodeSelector allows (a podless VMI's reads only its hostname),
// and a podless VMI's migration annotated TargetNodeAnnotation="NAME" goes to
// node NAME (another sandbox node than its source).
//
// A broken data plane: every migration into a node whose virt-handler pod
// runs an image tagged NoMigrateSuffix ("-nomigrate") fails as soon as its
// target is known, its failureReason saying so, while that pod stays Ready;
// migrations out of the node go on. The virt-handler canary's migration probe
// is tested against it.
//
// Lean mode, for thousands of VMs: Options.Podless runs VMIs without launcher
// pods (podless.go), Options.SkipTransitionalPhases writes no transitional VM
// status, Options.UpdaterWindow coalesces virt-controller's updater.
//
// Performance: the client has 500 QPS, each controller reconciles DefaultReconcilers
// objects at once, and nothing is written when nothing changed, so a migration
// costs the simulator a few milliseconds beyond its duration and a thousand VMIs
// start within seconds. CreateVMs creates VMs and their VMIs in parallel for tests
// and benchmarks.
package vmsim
