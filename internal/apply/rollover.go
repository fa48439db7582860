package apply

import (
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// RolledOver reports whether every Deployment and DaemonSet of the step is live
// as desired and its pods run its desired pod template (other kinds never hold
// a step back). "As desired" means the live object carries the desired
// object's hash, so a step whose objects were written in this reconcile is not
// done until the next one sees the workload controller catch up. Evaluate it
// on the live objects read before writing.
func (s Step) RolledOver(live map[ObjectRef]client.Object) bool {
	for _, o := range s.Objects {
		tmpl := PodTemplate(o)
		if tmpl == nil {
			continue
		}
		target := metadata.TemplateTarget(tmpl)
		l, ok := live[RefOf(o)]
		if !ok {
			return false
		}
		hash, err := Hash(o)
		if err != nil || l.GetAnnotations()[DesiredHashAnnotation] != hash {
			return false
		}
		switch w := l.(type) {
		case *appsv1.Deployment:
			if !DeploymentRolledOver(w, target) {
				return false
			}
		case *appsv1.DaemonSet:
			if !DaemonSetRolledOver(w, target) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// DeploymentRolledOver: the Deployment's pod template carries target's
// install-strategy annotations (its template's own: see metadata.TemplateTarget),
// its controller has observed the current generation, and every desired replica
// is updated and ready with no old replica left. Stricter than upstream (which
// is content with one ready pod), so the next component starts only once this
// one fully serves the target.
func DeploymentRolledOver(d *appsv1.Deployment, target metadata.Target) bool {
	if d == nil || !metadata.IsUpToDate(&d.Spec.Template, target) {
		return false
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	return st.ObservedGeneration >= d.Generation &&
		st.UpdatedReplicas == want && st.ReadyReplicas >= want && st.Replicas == want
}

// DaemonSetRolledOver: the DaemonSet's pod template carries target's
// annotations, its controller has observed the current generation, it is
// scheduled somewhere (as upstream: a DaemonSet on no node is not ready), and
// every scheduled pod is updated and ready.
func DaemonSetRolledOver(ds *appsv1.DaemonSet, target metadata.Target) bool {
	return DaemonSetRolledOverExcept(ds, target, 0)
}

// DaemonSetRolledOverExcept is DaemonSetRolledOver with up to leftOut pods
// (on nodes that are not Ready) neither updated nor ready.
func DaemonSetRolledOverExcept(ds *appsv1.DaemonSet, target metadata.Target, leftOut int32) bool {
	if ds == nil || !metadata.IsUpToDate(&ds.Spec.Template, target) {
		return false
	}
	st := ds.Status
	return st.ObservedGeneration >= ds.Generation && st.DesiredNumberScheduled > 0 &&
		st.UpdatedNumberScheduled+leftOut >= st.DesiredNumberScheduled &&
		st.NumberReady+leftOut >= st.DesiredNumberScheduled && st.NumberUnavailable <= leftOut
}
