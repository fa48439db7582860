package kubevirt

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/preflight"
)

// Retiring a stored version moves the CRD's storage version and trims its
// status.storedVersions.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions/status,verbs=patch

// retireStoredVersions prepares the CRD updates among writes that drop a
// version objects may have been stored in (status.storedVersions lists it; a
// rollback, v1.9.0's exports stored as v1 going back to v1.8.4): the API
// server refuses such an update. When the CRD has no objects, nothing is
// stored in any version, so the version is retired: the target's spec is
// written with it still listed (not served, not storage), then it is dropped
// from status.storedVersions; the update in writes then goes through. With
// objects, they would first have to be rewritten in a version both serve: the
// update is refused here, naming the CRD (the preflight refused it first,
// unless skipped).
func (r *Reconciler) retireStoredVersions(ctx context.Context, s *scope, writes []apply.Action) error {
	for _, a := range writes {
		want, ok := a.Object.(*apiextensionsv1.CustomResourceDefinition)
		if !ok || a.Live == nil || a.Op != apply.OpUpdate {
			continue
		}
		live := &apiextensionsv1.CustomResourceDefinition{}
		if err := r.APIReaderOrClient().Get(ctx, client.ObjectKeyFromObject(want), live); err != nil {
			return client.IgnoreNotFound(err)
		}
		retired := preflight.RetiredVersions(live.Status.StoredVersions, want)
		if len(retired) == 0 {
			continue
		}
		n, err := preflight.CountObjects(ctx, r.APIReaderOrClient(), live)
		if err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("CRD %s has objects, and versions %s they may be stored in are not served by the target: they must be rewritten in a version both serve first",
				want.Name, strings.Join(retired, ", "))
		}
		bridge := apply.Plan([]client.Object{apply.WithRetiredVersions(want, live, retired)}, map[apply.ObjectRef]client.Object{apply.RefOf(want): a.Live}, nil)
		if err := r.write(ctx, s, bridge); err != nil {
			return err
		}
		if err := r.trimStoredVersions(ctx, want.Name, retired); err != nil {
			return err
		}
		s.emit(eventNormal, "StoredVersionsRetired", "Rollout", fmt.Sprintf("CRD %s: versions %s retired from status.storedVersions (no objects are stored)", want.Name, strings.Join(retired, ", ")))
	}
	return nil
}

// trimStoredVersions drops versions from a CRD's status.storedVersions, read
// again after the bridge write (which added the new storage version).
func (r *Reconciler) trimStoredVersions(ctx context.Context, name string, retired []string) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := r.APIReaderOrClient().Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return err
	}
	base := crd.DeepCopy()
	crd.Status.StoredVersions = slices.DeleteFunc(crd.Status.StoredVersions, func(v string) bool { return slices.Contains(retired, v) })
	if err := r.Client.Status().Patch(ctx, crd, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("retiring stored versions of CRD %s: %w", name, err)
	}
	return nil
}
