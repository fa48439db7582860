package kubevirt

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
)

// ReasonTakingOver is the Progressing reason while this operator takes over a
// deployment another operator (upstream's) made, at the same version.
const ReasonTakingOver = "TakingOver"

// takeover is a deployment another operator recorded in status: the
// observed deployment's config is not one this operator wrote (it does not
// parse as this operator's, whose ID is its hash), as after replacing
// upstream's virt-operator with this one. It lasts until this operator has
// observed its own deployment.
type takeover struct {
	// ID, Version and Registry are what the other operator's status says runs.
	ID, Version, Registry string
}

// observeTakeover recognises a status whose observed deployment another
// operator wrote. Nothing of it is deleted before this operator's rollover
// (the orphan clean-up runs only then). A config this operator wrote under a
// different ID scheme reads as another's too; for the same release that only
// skips the preflight, which has nothing to check then.
func observeTakeover(st v1.KubeVirtStatus) *takeover {
	if st.ObservedDeploymentID == "" {
		return nil
	}
	if _, err := deployid.Parse(st.ObservedDeploymentConfig); err == nil {
		return nil
	}
	return &takeover{ID: st.ObservedDeploymentID, Version: st.ObservedKubeVirtVersion, Registry: st.ObservedKubeVirtRegistry}
}

// sameRelease: the take-over keeps the version and registry that run, so
// nothing but this operator's stamps should change (no preflight, nothing
// called degraded).
func (t *takeover) sameRelease(cfg *deployid.Config) bool {
	return t != nil && cfg != nil && t.Version == cfg.KubeVirtVersion && t.Registry == cfg.Registry
}

// sameTemplate says whether writing desired (a Deployment or DaemonSet) over
// live, which another operator wrote (it has no apply.TemplateHashAnnotation),
// would leave its pod template as it is but for the install-strategy stamps:
// the API server answers a dry run of the write with the object as it would
// store it (defaults applied, the other manager's fields kept), whose template
// is compared with the live one. Then apply.CarryStamps keeps the pods.
func (r *Reconciler) sameTemplate(ctx context.Context) func(desired, live client.Object) bool {
	return func(desired, live client.Object) bool {
		applied, err := (&apply.Applier{Client: r.Client}).DryRun(ctx, desired)
		if err != nil {
			log.FromContext(ctx).Info("cannot tell whether a workload would restart; it is written as desired", "object", apply.RefOf(desired).String(), "error", err.Error())
			return false
		}
		want, have := apply.PodTemplate(applied), apply.PodTemplate(live)
		return want != nil && have != nil && equality.Semantic.DeepEqual(apply.WithoutStamps(want), apply.WithoutStamps(have))
	}
}
