package apply

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// A workload whose pod template only changes its stamps keeps the running
// ones (no pod restarts); one whose template changes takes the new ones; one
// another operator wrote (no template hash) keeps them only when same says so.
func TestCarryStamps(t *testing.T) {
	stamped := func(d *appsv1.Deployment, id string) *appsv1.Deployment {
		d.Spec.Template.Annotations = map[string]string{metadata.InstallStrategyVersionAnnotation: "v1.9.0",
			metadata.InstallStrategyRegistryAnnotation: "quay.io/kubevirt", metadata.InstallStrategyIdentifierAnnotation: id}
		stampTemplateHash(d)
		return d
	}
	desiredOf := func(ds ...*appsv1.Deployment) *strategy.Strategy {
		s := &strategy.Strategy{}
		for _, d := range ds {
			if err := s.Add(d); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	liveOf := func(objs ...client.Object) map[ObjectRef]client.Object {
		m := map[ObjectRef]client.Object{}
		for _, o := range objs {
			m[RefOf(o)] = o
		}
		return m
	}
	id := func(d *appsv1.Deployment) string { return metadata.TemplateTarget(&d.Spec.Template).ID }

	sameAPI, liveAPI := stamped(deployment("virt-api", 2), "new"), stamped(deployment("virt-api", 2), "old")
	newCtrl := deployment("virt-controller", 2)
	newCtrl.Spec.Template.Spec.Containers[0].Args = append(newCtrl.Spec.Template.Spec.Containers[0].Args, "--v", "4")
	changed, liveCtrl := stamped(newCtrl, "new"), stamped(deployment("virt-controller", 2), "old")
	CarryStamps(desiredOf(sameAPI, changed), liveOf(liveAPI, liveCtrl), nil)
	if id(sameAPI) != "old" || id(changed) != "new" {
		t.Fatalf("template ids: same content %q (want old), changed %q (want new)", id(sameAPI), id(changed))
	}
	if TemplateHash(&sameAPI.Spec.Template) != sameAPI.Annotations[TemplateHashAnnotation] {
		t.Fatal("the carried template's hash changed: it must not count the stamps")
	}

	foreign := stamped(deployment("virt-api", 2), "upstream")
	delete(foreign.Annotations, TemplateHashAnnotation)
	for _, same := range []bool{false, true} {
		want := stamped(deployment("virt-api", 2), "new")
		CarryStamps(desiredOf(want), liveOf(foreign), func(_, _ client.Object) bool { return same })
		if got := id(want); (got == "upstream") != same {
			t.Fatalf("another operator's workload, same %v: template id %q", same, got)
		}
	}
}
