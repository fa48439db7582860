package apply

import (
	"slices"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

// versioned is obj as the deployment id would write it: its identifier
// annotation, and (as the live copy) the hash it was written with.
func versioned[T client.Object](obj T, id string, live bool) T {
	c := obj.DeepCopyObject().(T)
	ann := c.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[metadata.InstallStrategyIdentifierAnnotation] = id
	c.SetAnnotations(ann)
	if live {
		stamped, _, _ := stamp(c)
		c = stamped.(T)
	}
	return c
}

// What a held rollout writes: each object kept at the version it runs,
// nothing moved to the target.
func TestPlanKeep(t *testing.T) {
	api := deployment("virt-api", 2)
	edited := func(d client.Object) client.Object { // drift at the same version
		c := d.DeepCopyObject().(client.Object)
		c.SetGeneration(7)
		return c
	}
	oldAPI, newAPI := versioned(api, "old", false), versioned(deployment("virt-api", 3), "new", false)
	oldHandler, newHandler := versioned(daemonSet("virt-handler"), "old", false), versioned(daemonSet("virt-handler"), "new", false)
	oldOnly := versioned(service("virt-exportproxy"), "old", false)
	newOnly := versioned(service("virt-template"), "new", false)
	gens := func(objs ...client.Object) []v1.GenerationStatus {
		var out []v1.GenerationStatus
		for _, o := range objs {
			if g, ok := generationOf(o, o.GetGeneration(), o.GetAnnotations()[DesiredHashAnnotation]); ok {
				out = append(out, g)
			}
		}
		return out
	}
	liveOf := func(objs ...client.Object) map[ObjectRef]client.Object {
		m := map[ObjectRef]client.Object{}
		for _, o := range objs {
			m[RefOf(o)] = o
		}
		return m
	}
	target := []client.Object{newAPI, newHandler, newOnly}
	running := []client.Object{oldAPI, oldHandler, oldOnly}
	for _, tc := range []struct {
		name       string
		target     []client.Object
		live       map[ObjectRef]client.Object
		gens       []v1.GenerationStatus
		wantWrites []string // "Op Kind name version"
		wantHeld   []string
	}{{
		name:     "held before anything moved: nothing written, the target's objects held",
		target:   target,
		live:     liveOf(versioned(api, "old", true), versioned(daemonSet("virt-handler"), "old", true), versioned(service("virt-exportproxy"), "old", true)),
		gens:     gens(versioned(api, "old", true), versioned(daemonSet("virt-handler"), "old", true)),
		wantHeld: []string{"Deployment virt-api", "DaemonSet virt-handler", "Service virt-template"},
	}, {
		name:   "drift of what runs at the old version is repaired at the old version",
		target: target,
		live: liveOf(edited(versioned(api, "old", true)), versioned(daemonSet("virt-handler"), "old", true),
			versioned(service("virt-exportproxy"), "old", true)),
		gens:       gens(versioned(api, "old", true), versioned(daemonSet("virt-handler"), "old", true)),
		wantWrites: []string{"Update Deployment virt-api old"},
		wantHeld:   []string{"Deployment virt-api", "DaemonSet virt-handler", "Service virt-template"},
	}, {
		name:       "a deleted object of what runs comes back as it was, also one the target drops",
		target:     target,
		live:       liveOf(versioned(daemonSet("virt-handler"), "old", true)),
		gens:       gens(versioned(daemonSet("virt-handler"), "old", true)),
		wantWrites: []string{"Create Deployment virt-api old", "Create Service virt-exportproxy old"},
		wantHeld:   []string{"Deployment virt-api", "DaemonSet virt-handler", "Service virt-template"},
	}, {
		name:   "what already moved is repaired at the target, but never the canary's DaemonSet",
		target: target,
		live: liveOf(edited(versioned(deployment("virt-api", 3), "new", true)), edited(versioned(daemonSet("virt-handler"), "new", true)),
			versioned(service("virt-template"), "new", true)),
		gens:       gens(versioned(deployment("virt-api", 3), "new", true), versioned(daemonSet("virt-handler"), "new", true)),
		wantWrites: []string{"Update Deployment virt-api new", "Create Service virt-exportproxy old"},
	}, {
		name:   "an object of a third version (an earlier target) is left alone",
		target: target,
		live: liveOf(versioned(api, "earlier", true), versioned(daemonSet("virt-handler"), "old", true),
			versioned(service("virt-exportproxy"), "old", true)),
		gens:     gens(versioned(daemonSet("virt-handler"), "old", true)),
		wantHeld: []string{"Deployment virt-api", "DaemonSet virt-handler", "Service virt-template"},
	}, {
		name:       "no target strategy: what runs is kept",
		live:       liveOf(edited(versioned(api, "old", true))),
		gens:       gens(versioned(api, "old", true)),
		wantWrites: []string{"Update Deployment virt-api old", "Create DaemonSet virt-handler old", "Create Service virt-exportproxy old"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			writes, held := PlanKeep(tc.target, running, tc.live, tc.gens)
			var got []string
			for _, a := range writes {
				got = append(got, string(a.Op)+" "+RefOf(a.Object).Kind+" "+a.Object.GetName()+" "+
					a.Object.GetAnnotations()[metadata.InstallStrategyIdentifierAnnotation])
			}
			var gotHeld []string
			for _, ref := range held {
				gotHeld = append(gotHeld, ref.Kind+" "+ref.Name)
			}
			if !slices.Equal(got, tc.wantWrites) || !slices.Equal(gotHeld, tc.wantHeld) {
				t.Fatalf("writes %q held %q\nwant writes %q held %q", got, gotHeld, tc.wantWrites, tc.wantHeld)
			}
			// Idempotent: with the writes done, nothing more is written.
			for _, a := range writes {
				done, _, _ := stamp(a.Object)
				tc.live[RefOf(done)] = done
				tc.gens = MergeGenerations(tc.gens, gens(done))
			}
			if again, _ := PlanKeep(tc.target, running, tc.live, tc.gens); len(again) != 0 {
				t.Fatalf("a second plan writes %d objects", len(again))
			}
		})
	}
}
