// Package apply owns turning an install strategy into cluster state: the
// customization of the strategy (spec.customizeComponents, flags, node
// placement), the desired objects with the operator's metadata, the decision
// which of them need a write (Plan), the writes themselves (Applier), the order
// of component bring-up (Steps), PodDisruptionBudgets, the objects a new strategy
// no longer holds (Orphans) and the uninstall order.
//
// Everything is a pure function over typed objects except two thin shells:
// observe.go (reads: LiveObjects, ListManaged, ServedOnly) and applier.go
// (writes). The controller strings them together:
//
//	custom, err  := apply.Customize(strategy, cfg)     // *PatchError: Degraded, write nothing
//	served, err  := apply.ServedOnly(custom, mapper)   // drop monitoring/OpenShift kinds not served
//	desired      := apply.Desired(served, cfg)         // the operator's labels and annotations
//	live, err    := apply.LiveObjects(ctx, reader, desired)
//	for _, step := range apply.Steps(desired, apply.ChoosePath(target, observed)) {
//	    gens, err := applier.Apply(ctx, apply.Plan(step.Objects, live, status.Generations))
//	    status.Generations = apply.MergeGenerations(status.Generations, gens)
//	    if !step.RolledOver(live, target) { break } // requeue
//	}
//	// all rolled over: delete apply.Orphans(apply.Refs(steps), managed)
//
// # Change detection
//
// Plan never compares whole objects with the live ones (the API server defaults
// too many fields for that to be stable). Instead every desired object carries
// DesiredHashAnnotation, a hash of its canonical JSON. An object needs a write
// when the live copy is absent, carries another hash, lost one of our labels or
// annotations, or was edited out of band. Out-of-band edits are detected per kind:
// for kinds whose metadata.generation the API server bumps on every spec change
// (Deployment, DaemonSet, CRD, webhook configurations, admission policies, PDB,
// monitoring objects) by comparing it with the generation recorded in
// status.generations after our last write; for the others (RBAC, Service,
// ServiceAccount, ConfigMap, Secret, APIService, OpenShift kinds) by a small
// kind-specific comparison of the fields we own. So an unchanged cluster plans
// only None: the operator makes no write at rest.
//
// # Write method
//
// Creates and updates are server-side apply patches (field manager
// "virt-operator", force ownership) of the desired object. Compared with a JSON
// patch or a full Update with resourceVersion, SSA
//   - reverts out-of-band edits of every field we set, with no read-modify-write
//     race and no conflict retry loop;
//   - leaves fields other actors own alone (the Deployment controller's revision
//     annotation, a clusterIP the API server allocated, labels added by users);
//   - removes a field we stop setting on the next write, because the manager
//     owns exactly what it last applied;
//   - is idempotent, so a Create racing a restart of the operator is harmless.
//
// Creates are SSA too, so one manager owns the object from its birth. A Service
// whose type or clusterIP must change is deleted and created again (Recreate):
// those fields are immutable or allocator-owned. Two writes are not applies:
// an object SSA cannot express (repeatedKeys) is replaced by an Update, and a
// webhook configuration that drops a webhook is a merge patch of the list, as
// SSA would keep the webhook while the certificate controller owns
// its caBundle (replaceWebhooks).
//
// The virt-handler DaemonSet write goes through Applier.DaemonSets when it is set,
// so a canary rollout can take it over without touching the rest.
package apply
