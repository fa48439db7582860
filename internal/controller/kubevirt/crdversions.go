package kubevirt

import (
	"context"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/storedversions"
)

// Retiring a stored version moves the CRD's storage version and trims its
// status.storedVersions; objects stored in it are rewritten first (hack/rbacgen
// grants update on the kinds a move between two supported releases retires).
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions/status,verbs=patch

// storageSwitchTimeout bounds the wait for the API server to store a CRD's
// objects in the bridge's storage version (a moment, normally); past it the
// reconcile fails and the next one writes the bridge again.
const storageSwitchTimeout = 30 * time.Second

// migrateStoredVersions prepares the CRD updates among writes that drop a
// version objects may be stored in (status.storedVersions lists it; a
// rollback, v1.9.0's exports stored as v1 going back to v1.8.4): the API
// server refuses such an update. storedversions.Decide says what each needs:
// the bridge CRD (the target's, with the retired versions still listed and a
// version both serve as the storage version) is written, the objects, if any,
// rewritten in that version, and the retired versions trimmed; the update in
// writes then goes through. With objects and no version in common the update
// is refused, naming the CRD (the preflight refused it first, unless skipped).
func (r *Reconciler) migrateStoredVersions(ctx context.Context, s *scope, writes []apply.Action) error {
	reader := r.APIReaderOrClient() // the cache holds CRDs as metadata only
	for _, a := range writes {
		want, ok := a.Object.(*apiextensionsv1.CustomResourceDefinition)
		if !ok || a.Live == nil || a.Op != apply.OpUpdate {
			continue
		}
		live, d, err := storedversions.ReadOne(ctx, reader, want)
		switch {
		case err != nil:
			return err
		case live == nil || d.Action == storedversions.Keep:
			continue
		case d.Action == storedversions.Refuse:
			return fmt.Errorf("CRD %s: stored versions %s are not served by the target, and it serves none of the versions %d objects can be read in",
				d.CRD, strings.Join(d.Retired, ", "), d.Objects)
		}
		bridge := apply.Plan([]client.Object{storedversions.Bridge(want, live, d)}, map[apply.ObjectRef]client.Object{apply.RefOf(want): a.Live}, nil)
		if err := r.write(ctx, s, bridge); err != nil {
			return err
		}
		// Retire waits for the storage switch too, then rewrites what it finds
		// (normally nothing: one list): an object created between the count
		// and the switch is stored in a retired version, and the whole kind
		// would fail to list once the target drops it.
		via := d.Via
		if d.Action == storedversions.Retire {
			via = storedversions.StorageVersion(want)
		}
		if r.Resources != nil {
			if err := storedversions.WaitStored(ctx, r.Resources, want, via, storageSwitchTimeout); err != nil {
				return err
			}
		}
		rewritten, err := storedversions.RewriteObjects(ctx, r.Client, want, via)
		if err != nil {
			return err
		}
		message := fmt.Sprintf("CRD %s: versions %s retired from status.storedVersions (no objects are stored)", d.CRD, strings.Join(d.Retired, ", "))
		if d.Action == storedversions.Rewrite || rewritten > 0 {
			message = fmt.Sprintf("CRD %s: %d %ss rewritten as %s, versions %s retired from status.storedVersions", d.CRD, rewritten, d.Kind, via, strings.Join(d.Retired, ", "))
		}
		if err := storedversions.Trim(ctx, r.Client, reader, want.Name, d.Retired); err != nil {
			return err
		}
		s.emit(eventNormal, "StoredVersionsRetired", "Rollout", message)
	}
	return nil
}
