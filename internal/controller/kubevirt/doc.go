// Package kubevirt owns the KubeVirt CR's controller: for the active CR in the
// operator's namespace it installs, upgrades and keeps the control plane its
// spec describes, and uninstalls it when the CR is deleted.
//
// # One pass
//
// Reconcile (controller.go) reads the CR, builds a scope (scope.go) and runs
// the phases, which act on other objects and record what they saw and did in
// the scope, never in the CR's status. When the pass ends, a deferred step
// derives the whole status from the previous one and the scope with one pure
// function, nextStatus (status.go), patches it once when it changed, and only
// then emits the pass's Events (events.go): a transition (a new target, a
// deployment done, a problem appearing) once, when the status recording it is
// written; what a phase did (a Job created, certificates issued) as it happened.
//
// The normal path runs the phases list (install.go), in order: finalizer,
// target, strategies (package strategysource), retained CRDs, certificates
// (asked of the certificate controller, package controller/certificates),
// hold, preflight, objects (the virt-handler canary's files are canary*.go),
// finish. Each records a result that exists only when it concluded;
// docs/architecture.md describes each, and a test holds its table to the list.
// The delete path (uninstall.go, package uninstall) records s.deletion; a CR
// that is not the active one (package activecr) only gets a condition saying
// so.
//
// What a hold holds: nothing new starts (no object moves to the target, the
// canary widens no further). What it never holds: certificate renewal, the
// repair of what runs (each object at the version it runs, apply.PlanKeep),
// the canary's judgement of pods already replaced, and status.
//
// # Status ownership
//
// nextStatus decides every field but three: status.workloadUpdates belongs to
// the workload updater (package controller/workloadupdate),
// status.certificates to the certificate controller, and
// status.outdatedVirtualMachineInstanceWorkloads to virt-controller; the
// patch carries only the fields that changed, so none is ever written here.
//
// # Process memory
//
// Everything the next pass needs is in the cluster (status, the strategy
// ConfigMaps and Jobs, named from the ID and attempt) but for these fields of
// the Reconciler, each lost harmlessly on a restart:
//
//   - written: the last status written and the versions it replaced. The
//     cache may deliver an event before that write; a pass acting on the older
//     status would announce its transitions twice (a read-your-own-writes
//     shim, until controller-runtime has one).
//   - transient: since when errors have been transient only (package
//     transient), so an API server restart shows as Degraded only after a
//     minute. In status it would cost a write per transient error, the churn
//     the grace avoids; a restart restarts the grace.
//   - source: the strategy source, whose decode cache holds the last two
//     decoded strategies (the target's and the observed one's), keyed by
//     ConfigMap UID and resourceVersion; a performance cache.
//   - monitorAccounts: the monitoring ServiceAccounts the watch passes; fed by
//     each pass, read by a predicate.
//   - orphansCheckedFor: the strategy ConfigMap the last orphan scan ran
//     against; a restart runs one scan more.
//
// One worker reconciles; the fields read by watch predicates (monitorAccounts)
// or written from the pass's end (written) are safe for concurrent use.
package kubevirt
