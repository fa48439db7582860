// Package rollout owns the decision of the virt-handler canary upgrade: given the
// live DaemonSet, its pods, the target and the rollout state stored in the
// KubeVirt status, Plan says which phase the rollout is in and what the controller
// must do next (the DaemonSet's update strategy, which old pods to delete, whether
// to roll back, record the generation or emit an Event, and when to look again).
//
// It is pure: no client, no clock (Observation.Now is an input), no logging. The
// controller reads, calls Plan, applies the Decision and writes Decision.Status.
//
// Design. A DaemonSet at RollingUpdate maxUnavailable 1 replaces the next node's
// pod as soon as the previous one is Ready, so it cannot hold a canary. While the
// canary bakes the DaemonSet is therefore set to OnDelete and the canary is started
// by deleting the old pod on CanarySize chosen nodes (pinned in the state, so a
// restarted operator resumes on the same nodes instead of picking new ones). Only
// when every canary pod has been Ready, without a restart, for Policy.BakeTime does
// the rollout widen to RollingUpdate at Policy.FastStep; when every pod is updated
// and ready it returns to maxUnavailable 1 and the generation is recorded.
//
// Phases: Started → Canary → Increasing → Waiting → Successful, and Failed from any
// of them. The phase is stored explicitly (never inferred from maxUnavailable
// unless no state is stored, e.g. after an upgrade from an older operator).
//
// Invariants (checked by the sequence tests):
//   - while the phase is Started or Canary, at most CanarySize pods run the target
//     (the DaemonSet is OnDelete and only canary pods are deleted);
//   - only SpecChanged restarts the canary; an unknown generation alone resumes;
//   - a pod is updated only by its three install-strategy annotations
//     (metadata.PodIsUpToDate) and ready only by metadata.PodIsReady;
//   - any container restart of an updated pod fails the rollout and asks for a
//     rollback; Failed holds (rollback kept) until the target changes;
//   - more updated pods than desired is an error, never a crash.
//
// Wiring (the controller's side), per reconcile of an existing virt-handler
// DaemonSet (a newly created one needs no canary: record its generation):
//  1. Observation: the live DaemonSet and its pods (terminating ones included),
//     the target, SpecChanged / GenerationUnknown as today, the stored state
//     (StateFromStatus(status.handlerRollout, storedTargetID)) and Now.
//  2. On SpecChanged, write the template PlanTemplate gives (the desired one,
//     carrying the running one's TLS arguments and handler certificate Secret
//     while the rollout is in progress) with Decision.UpdateStrategy in the same
//     write; otherwise write only if !SameStrategy or what is carried changes
//     (PlanTemplate's DropCarried once the rollout has succeeded: the clean
//     template, which detaches the certificate Secret, at the strategy
//     CleanupStrategy gives until every pod runs it). On Rollback write the
//     previous template instead (and keep it while the phase is Failed).
//  3. Delete DeletePods, record the generation if RecordGeneration, emit Event,
//     set Degraded from Decision.Degraded, write Decision.Status, requeue after
//     RequeueAfter.
//  4. On an error, change nothing and requeue with backoff.
//
// Failed holds for the target it failed on only if the controller keeps the
// target ID with the status (State.TargetID); without it a failed rollout is
// retried (each retry touches only the canary nodes).
package rollout
