// Package workloadupdate is the pure decision core of the workload updater: after an
// upgrade it decides which running VMIs move onto the new virt-launcher, and how.
//
// It owns:
//
//   - the safety gate (Gate): act only when the KubeVirt CR is Deployed and
//     observedDeploymentID == targetDeploymentID, i.e. never while the
//     infrastructure (virt-handler in particular) is still rolling out;
//   - the per-VMI classification (Classify) into exactly one Bucket: UpToDate,
//     Migrate, Evict, Abort, InFlight or Skip;
//   - the plan for one reconcile (PlanUpdate): which migrations to create, which
//     launcher pods to evict, which workload-update migrations to abort, the
//     outdated and in-flight counts, and when to look again;
//   - the shape of the migrations it asks for (NewMigration) and the exact
//     annotation, label, generateName and event strings.
//
// It does no I/O: no client, no clock, no global randomness. The controller shell
// lists VMIs and migrations, passes Now, the last eviction batch time (kept on the
// KubeVirt CR's status.workloadUpdates) and an ordering seed, and applies
// the plan.
//
// Rules:
//
//   - Outdated means status.launcherContainerImageVersion is set and differs from
//     the target launcher image. Empty means unknown: the VMI is skipped, and it is
//     never a reason to abort a migration.
//   - A VMI with a pending hotplug (MigrationRequired, HotVCPUChange, HotMemoryChange)
//     or volume change (VolumesChange) needs a migration too; such migrations get
//     priority user-triggered (volume changes also the volume-update label); upgrade
//     migrations get system-critical. These VMIs count as outdated, as upstream.
//   - In-flight state is derived from the migrations list only (never from memory),
//     so it survives an operator restart: a VMI that is migrating, or that any
//     unfinished migration targets, gets no new action.
//   - With no method allowed nothing is acted on (no abort either); the outdated
//     count is still computed for status and the metric.
//   - Pacing by capacity (pacing.go): at most PerNode outbound migrations per
//     source node, and a cluster cap that defaults to the nodes running outdated
//     VMIs times PerNode, bounded by parallelMigrationsPerCluster. New migrations
//     are the cap minus the active ones (a migration in a running phase, plus this
//     updater's own still pending), picked round-robin over the nodes, busiest
//     first. Upstream's settings (UpstreamSettings) have no per-node cap and 5.
//   - A failed migration backs its VMI off (backoff.go): initial delay doubling
//     to a maximum, counted from the failures since its last successful migration
//     as the migrations list shows them, so a restart keeps it; after MaxFailures
//     the VMI needs attention and is not migrated again (or is evicted).
//   - Migration targets (targets.go): a VMI to migrate that no other usable node
//     can take (Ready, uncordoned, matching its node selector and required
//     affinity, taints tolerated) gets no migration: it is evicted when its
//     methods allow, else reported not movable (Plan.NotMovable). A nil Targets
//     checks nothing, as upstream's updater.
//   - A VM's own choice (choice.go), label or annotation ChoiceKey: LiveMigrate,
//     Evict or None; an invalid value leaves the VMI alone.
//   - Pause and maintenance windows (window.go) hold new moves; aborts and what
//     is in flight go on.
//   - Evictions happen in batches of BatchEvictionSize, no sooner than
//     BatchEvictionInterval after the previous batch.
//   - Candidates are ordered by a seeded shuffle (deterministic for a seed; a new
//     seed per reconcile rotates the order so a stuck VMI cannot starve the others),
//     then VMIs whose earlier workload-update migrations failed go last: they are
//     retried later, not forgotten.
//   - An unfinished workload-update migration of a VMI that is up to date again and
//     has no change pending is aborted, unless the VMI is past the point of no
//     return (its migration state reports completion).
//   - RequeueAfter is a real duration: the time until the next eviction batch may
//     run, capped by the 30 s resync (upstream's resync was 30 ns by a unit bug).
package workloadupdate
