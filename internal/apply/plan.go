package apply

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Op is what an Action does.
type Op string

const (
	OpNone   Op = "None"
	OpCreate Op = "Create"
	OpUpdate Op = "Update"
	OpDelete Op = "Delete"
	// OpRecreate deletes the live object and creates the desired one: a Service
	// whose type or clusterIP must change.
	OpRecreate Op = "Recreate"
	// OpRecord writes nothing: the live object is this operator's own latest
	// write, which status.generations does not record yet (the process
	// stopped, or its status write failed, in between); its generation is to
	// be recorded (Recorded).
	OpRecord Op = "Record"
)

// Action is one decision of Plan (or of Deletions).
type Action struct {
	Op Op
	// Object is the desired object, carrying DesiredHashAnnotation (for
	// OpDelete: the object to delete).
	Object client.Object
	// Live is the live object, nil when absent.
	Live client.Object
	// Reason says why, in words fit for a log or an event; "" for OpNone.
	Reason string
}

// Plan decides, for each desired object in order, whether it must be created,
// updated, recreated, or left alone (see the package doc for the rules). live
// holds the live objects by reference (absent: not found); gens is
// status.generations. Plan is pure; applying its actions and planning again on
// the result yields only OpNone.
func Plan(desired []client.Object, live map[ObjectRef]client.Object, gens []v1.GenerationStatus) []Action {
	out := make([]Action, 0, len(desired))
	for _, d := range desired {
		out = append(out, planOne(d, live[RefOf(d)], gens))
	}
	return out
}

func planOne(desired, live client.Object, gens []v1.GenerationStatus) Action {
	want, hash, err := stamp(desired)
	if err != nil {
		// Typed objects always convert; keep the decision total anyway.
		return Action{Op: OpUpdate, Object: desired, Live: live, Reason: err.Error()}
	}
	a := Action{Op: OpNone, Object: want, Live: live}
	switch {
	case live == nil:
		a.Op, a.Reason = OpCreate, "absent"
	case live.GetDeletionTimestamp() != nil:
		// Wait: writing would resurrect nothing, the deletion event requeues us.
		a.Reason = "being deleted"
	default:
		a.Op, a.Reason = compare(want, hash, live, gens)
	}
	return a
}

func compare(want client.Object, hash string, live client.Object, gens []v1.GenerationStatus) (Op, string) {
	if why := needsRecreate(want, live); why != "" {
		return OpRecreate, why
	}
	if got := live.GetAnnotations()[DesiredHashAnnotation]; got != hash {
		if got == "" {
			return OpUpdate, "not written by this operator version"
		}
		return OpUpdate, "desired state changed"
	}
	if why := metadataDrift(want, live); why != "" {
		return OpUpdate, why
	}
	if _, _, tracked := generationResource(want); tracked {
		if last := lastGeneration(gens, want); last != live.GetGeneration() {
			if writtenByUs(live) {
				return OpRecord, fmt.Sprintf("this operator's own write (generation %d, last recorded %d)", live.GetGeneration(), last)
			}
			if last < 0 {
				return OpUpdate, "no generation recorded"
			}
			return OpUpdate, fmt.Sprintf("edited out of band (generation %d, last applied %d)", live.GetGeneration(), last)
		}
		return OpNone, ""
	}
	if why := ownedFieldsDrift(want, live); why != "" {
		return OpUpdate, "edited out of band: " + why
	}
	return OpNone, ""
}

// Deletions turns objects (orphans, or one group of UninstallOrder) into delete
// actions; objects already being deleted are skipped.
func Deletions(objs []client.Object, reason string) []Action {
	var out []Action
	for _, o := range objs {
		if o.GetDeletionTimestamp() == nil {
			out = append(out, Action{Op: OpDelete, Object: o, Live: o, Reason: reason})
		}
	}
	return out
}

// Writes returns the actions that write (every Op but None and Record).
func Writes(actions []Action) []Action {
	var out []Action
	for _, a := range actions {
		if a.Op != OpNone && a.Op != OpRecord {
			out = append(out, a)
		}
	}
	return out
}

// Recorded are the status.generations entries of the OpRecord actions: the
// live objects this operator wrote last, at their live generation.
func Recorded(actions []Action) []v1.GenerationStatus {
	var out []v1.GenerationStatus
	for _, a := range actions {
		if a.Op != OpRecord {
			continue
		}
		if g, ok := generationOf(a.Object, a.Live.GetGeneration(), a.Live.GetAnnotations()[DesiredHashAnnotation]); ok {
			out = append(out, g)
		}
	}
	return out
}
