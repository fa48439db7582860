package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// A workload restarts only when its own pods change. Every object of a
// deployment, pod templates included, is stamped with the deployment's
// install-strategy annotations (version, registry, ID), and the ID changes with
// any input: another operator image, a placement of other components, a patch
// of another Deployment. Were the new stamps written into a pod template whose
// content is otherwise the same, every component would restart on every
// change. So a workload's pod template keeps the stamps it runs with while
// only they would change (CarryStamps): its pods are the target's, and the
// readiness and canary checks compare pods with the stamps of their own
// workload's template (metadata.TemplateTarget), not with the deployment's ID.

// TemplateHashAnnotation carries, on a Deployment or DaemonSet, the hash of its
// pod template without the install-strategy stamps: equal hashes mean the
// same pods, whatever deployment stamped them.
const TemplateHashAnnotation = "kubevirt.io/virt-operator-template-hash"

// stampAnnotations are the install-strategy annotations a pod template carries.
var stampAnnotations = []string{metadata.InstallStrategyVersionAnnotation, metadata.InstallStrategyRegistryAnnotation,
	metadata.InstallStrategyIdentifierAnnotation}

// TemplateHash is the hash of tmpl without its install-strategy stamps.
func TemplateHash(tmpl *corev1.PodTemplateSpec) string {
	raw, err := json.Marshal(WithoutStamps(tmpl))
	if err != nil {
		return "" // a typed pod template always marshals
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}

// WithoutStamps is a copy of tmpl without its install-strategy stamps (and
// without annotations at all when they were all it had).
func WithoutStamps(tmpl *corev1.PodTemplateSpec) *corev1.PodTemplateSpec {
	c := tmpl.DeepCopy()
	for _, k := range stampAnnotations {
		delete(c.Annotations, k)
	}
	if len(c.Annotations) == 0 {
		c.Annotations = nil
	}
	return c
}

// stampTemplateHash sets TemplateHashAnnotation on a workload (Desired calls it).
func stampTemplateHash(obj client.Object) {
	tmpl := PodTemplate(obj)
	if tmpl == nil {
		return
	}
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[TemplateHashAnnotation] = TemplateHash(tmpl)
	obj.SetAnnotations(ann)
}

// CarryStamps keeps the pods of every workload of desired whose pod template
// only changed its stamps: where the live workload's TemplateHashAnnotation
// (or, for one another operator wrote, same(desired, live)) says its pod
// template is the same as desired's, desired's template takes the live
// template's stamps, so writing it restarts nothing. desired is modified.
func CarryStamps(desired *strategy.Strategy, live map[ObjectRef]client.Object, same func(desired, live client.Object) bool) {
	for _, o := range desired.Objects() {
		want := PodTemplate(o)
		l := live[RefOf(o)]
		if want == nil || l == nil {
			continue
		}
		have := PodTemplate(l)
		hash, recorded := l.GetAnnotations()[TemplateHashAnnotation]
		switch {
		case have == nil:
			continue
		case recorded && hash != o.GetAnnotations()[TemplateHashAnnotation]:
			continue
		case !recorded && (same == nil || !same(o, l)):
			continue
		}
		for _, k := range stampAnnotations {
			if v, ok := have.Annotations[k]; ok {
				want.Annotations[k] = v
			}
		}
	}
}
