// Package workloadupdate is the controller shell of the workload updater: after an
// upgrade it moves running VMIs onto the new virt-launcher by live migration or
// eviction. The decisions come from the pure core in internal/workloadupdate; this
// package owns the I/O around them:
//
//   - reading the active KubeVirt CR, its VMIs and migrations from the cache, and
//     the gate (Deployed, observed == target) before acting;
//   - creating migrations, evicting launcher pods through the policy/v1 Eviction API,
//     deleting aborted migrations, and the Events on the VMIs;
//   - remembering its own writes until the cache shows them (pending.go), so an
//     event that arrives before the informer catches up never causes a duplicate
//     migration or a second eviction; after a restart the API is the only truth;
//   - status.workloadUpdates (who acts, counts, choices, backoff, attention,
//     pause and window) and the Prometheus metrics (metrics.go); the Events of a
//     lasting state once (notices.go);
//   - acting only as the CR's one actor: when spec.workloadUpdateStrategy lists
//     methods, upstream's virt-controller moves the VMs (it has no switch) and this
//     updater only counts them; it never writes virt-controller's
//     status.outdatedVirtualMachineInstanceWorkloads;
//   - staying quiet (watch.go): no plan for VMI or migration events while the
//     gate is closed, none for VMI updates that change nothing it reads, and VMI
//     bursts gathered into one plan.
//
// It is event-driven: a finished migration or a changed VMI brings it back at once;
// the 30 s resync only covers what no event announces.
package workloadupdate
