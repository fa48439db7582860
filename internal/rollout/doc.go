// Package rollout owns the decision of the virt-handler canary upgrade: given the
// live DaemonSet, its pods, the target and the rollout state stored in the
// KubeVirt status, Plan says which phase the rollout is in and what the controller
// must do next (the DaemonSet's update strategy, which old pods to delete, whether
// to roll back, record the generation or emit an Event, and when to look again).
//
// It is pure: no client, no clock (Observation.Now is an input), no logging. The
// controller reads, calls Plan, applies the Decision and writes Decision.Status.
//
// Phases: Started → Canary → (Verifying) → Increasing → Waiting → Successful,
// and Failed from any of them, stored explicitly in status.handlerRollout.
// Verifying runs the data-plane checks spec.handlerRollout.dataPlaneChecks
// asks for (checks.go, probe.go: the canary VMIs stay Running, the canary pod
// stays well, a migration probe moves a selected VMI onto and off the canary
// node); without any the canary widens once baked, as before. The checks'
// progress is State.Checks, in status; their reads are Observation.DataPlane
// (NeedsDataPlane), their writes Decision.CreateMigration and AbortMigrations. Why the DaemonSet is held
// under OnDelete while the canary bakes, the transitions, the invariants the
// sequence tests check, and the controller's side of the contract (Observation,
// template writes, rollback, Failed holds) are in docs/design/canary.md.
//
// Live migrations (Observation.Migrations) hold the pods of their source and
// target nodes for at most Policy.MaxMigrationWait: such a pod is never deleted
// for the canary, and while one is still old the widened rollout is OnDelete
// with the Decision deleting fast-step batches elsewhere; the phases and their
// invariants are unchanged, the held nodes are State.Waits, and a phase held by
// them alone runs no deadline (docs/design/canary.md, "Live migrations").
package rollout
