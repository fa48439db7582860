package kubevirt

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// desiredAPI is the desired state of one virt-api Deployment for cfg.
func desiredAPI(cfg *deployid.Config) *strategy.Strategy {
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-api"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubevirt.io": "virt-api"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"kubevirt.io": "virt-api"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "virt-api", Image: "quay.io/kubevirt/virt-api:v1.8.4"}}},
			},
		},
	}
	return apply.Desired(&strategy.Strategy{Deployments: []*appsv1.Deployment{d}}, cfg)
}

// A held or not-yet-ready rollout keeps what runs as the observed deployment
// wrote it: a workload whose pods kept an older deployment's stamps (a change
// that left their template alone) is not rewritten to the observed stamps,
// which would restart it (the first pass of every change went there).
func TestKeepRunningKeepsCarriedStamps(t *testing.T) {
	first := &deployid.Config{ID: "first", KubeVirtVersion: "v1.8.4", Registry: "quay.io/kubevirt"}
	observed := &deployid.Config{ID: "observed", KubeVirtVersion: "v1.8.4", Registry: "quay.io/kubevirt"}

	// As written at "observed": its template carried "first"'s stamps.
	installed := apply.Plan(desiredAPI(first).Objects(), nil, nil)[0].Object
	atObserved := desiredAPI(observed)
	apply.CarryStamps(atObserved, map[apply.ObjectRef]client.Object{apply.RefOf(installed): installed}, nil)
	live := apply.Plan(atObserved.Objects(), nil, nil)[0].Object.(*appsv1.Deployment)
	live.Generation = 3
	if got := metadata.TemplateTarget(&live.Spec.Template).ID; got != "first" {
		t.Fatalf("set-up: the live template's stamps are %q", got)
	}

	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(live).Build()
	r := &Reconciler{Client: c, Namespace: "kubevirt"}
	gens := []v1.GenerationStatus{{Group: "apps", Resource: "deployments", Namespace: "kubevirt", Name: "virt-api", LastGeneration: 3}}
	s := &scope{kv: &v1.KubeVirt{Status: v1.KubeVirtStatus{Generations: gens}}, observed: &deployment{cfg: observed, desired: desiredAPI(observed)}}
	if err := r.keepRunning(context.Background(), s, &objectsResult{}); err != nil {
		t.Fatal(err)
	}
	got := &appsv1.Deployment{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(live), got); err != nil {
		t.Fatal(err)
	}
	if id := metadata.TemplateTarget(&got.Spec.Template).ID; id != "first" || got.ResourceVersion != live.ResourceVersion {
		t.Errorf("the running template was rewritten: stamps %q, resourceVersion %s (was %s)", id, got.ResourceVersion, live.ResourceVersion)
	}
}

// A workload another operator wrote keeps its pods when this operator's write
// would change only the stamps of its template: the dry run's answer, typed,
// is compared with the live template.
func TestSameTemplateAsAnotherOperatorWroteIt(t *testing.T) {
	theirs := desiredAPI(&deployid.Config{ID: "upstreams", KubeVirtVersion: "v1.9.0", Registry: "quay.io/kubevirt"}).Deployments[0]
	delete(theirs.Annotations, apply.TemplateHashAnnotation)
	theirs.TypeMeta = metav1.TypeMeta{}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(theirs).Build()
	r := &Reconciler{Client: c, Namespace: "kubevirt"}
	same := r.sameTemplate(context.Background())

	ours := desiredAPI(&deployid.Config{ID: "ours", KubeVirtVersion: "v1.9.0", Registry: "quay.io/kubevirt"}).Deployments[0]
	if !same(ours, theirs) {
		t.Error("a write changing only the stamps is taken for a restart")
	}
	ours.Spec.Template.Spec.Containers[0].Image = "quay.io/kubevirt/virt-api:v1.9.1"
	if same(ours, theirs) {
		t.Error("a new image is taken for the same template")
	}
}
