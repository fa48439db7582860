package apply

import (
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

// PlanKeep decides the writes of a rollout that may start nothing new (it is
// held, or has no target strategy to go to): what runs is kept as it is, and
// no object moves to the target. target and running are the desired states of
// the target and of the deployment that last rolled out (either may be
// empty). Each object is planned against the version it runs, as its
// install-strategy identifier annotation says (its content hash would not do:
// a CA rotation changes the caBundle of the running webhooks):
//
//   - live at the target's version (this rollout wrote it): against the
//     target, so drift is repaired — except DaemonSets, whose writes at the
//     target are the virt-handler canary's alone (its update strategy is not
//     the desired one while it runs);
//   - live at the running deployment's version, or absent while the running
//     deployment has it: against the running deployment (drift repaired, a
//     deleted object re-created as it was);
//   - anything else is left alone; held lists those the target has, the
//     writes the rollout holds back.
//
// Like Plan it is pure, and planning again after its writes yields none.
func PlanKeep(target, running []client.Object, live map[ObjectRef]client.Object, gens []v1.GenerationStatus) (writes []Action, held []ObjectRef) {
	runningByRef := make(map[ObjectRef]client.Object, len(running))
	for _, o := range running {
		runningByRef[RefOf(o)] = o
	}
	inTarget := make(map[ObjectRef]bool, len(target))
	for _, want := range target {
		ref := RefOf(want)
		inTarget[ref] = true
		switch a := planOne(want, live[ref], gens); {
		case a.Op == OpNone:
		case a.Op == OpRecord:
			if !isDaemonSet(want) { // virt-handler's generation is the canary's to record
				writes = append(writes, a) // nothing written: its generation is recorded
			}
		case sameVersion(want, a.Live):
			if !isDaemonSet(want) {
				writes = append(writes, a)
			}
		default:
			held = append(held, ref)
			if keepsRunning(runningByRef[ref], live[ref]) {
				if r := planOne(runningByRef[ref], live[ref], gens); r.Op != OpNone {
					writes = append(writes, r)
				}
			}
		}
	}
	for _, o := range running {
		ref := RefOf(o)
		if inTarget[ref] || !keepsRunning(o, live[ref]) {
			continue
		}
		if r := planOne(o, live[ref], gens); r.Op != OpNone {
			writes = append(writes, r)
		}
	}
	return writes, held
}

// keepsRunning: the running deployment has the object and the live one is
// absent or runs the running deployment's version.
func keepsRunning(running, live client.Object) bool {
	return running != nil && (live == nil || sameVersion(running, live))
}

// sameVersion: live exists and carries want's install-strategy identifier.
func sameVersion(want, live client.Object) bool {
	return live != nil && live.GetAnnotations()[metadata.InstallStrategyIdentifierAnnotation] == want.GetAnnotations()[metadata.InstallStrategyIdentifierAnnotation]
}

func isDaemonSet(o client.Object) bool {
	_, ok := o.(*appsv1.DaemonSet)
	return ok
}
