package kubevirt

import (
	"context"
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/uninstall"
)

// reconcileDelete is the delete path (package uninstall): one pass of the
// uninstall, whose result the status records; the finalizer goes once every
// object is gone.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) error {
	kv := s.kv
	if kv.Status.Phase == v1.KubeVirtPhaseDeleted {
		s.deletion = &uninstall.Result{Done: true}
		return r.removeFinalizer(ctx, kv)
	}
	res, err := r.uninstaller().Step(ctx, uninstall.Input{KubeVirt: kv, Now: s.now, BlockedSince: blockedSince(kv)})
	s.deletion = &res
	s.Merge(res.Report)
	if err != nil || !res.Done {
		return err
	}
	// Removing the finalizer lets the API server delete the CR; the status
	// patch that ends the pass then finds it gone, which is fine.
	return r.removeFinalizer(ctx, kv)
}

// blockedSince is when the uninstall was first held (its condition's
// transition); zero when it is not held.
func blockedSince(kv *v1.KubeVirt) time.Time {
	if c := findCondition(kv.Status.Conditions, v1.KubeVirtConditionSynchronized); c != nil && c.Reason == ReasonDeletionBlocked {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// uninstaller is the Reconciler's uninstaller, made on first use from its
// fields.
func (r *Reconciler) uninstaller() *uninstall.Uninstaller {
	return &uninstall.Uninstaller{Client: r.Client, Live: r.APIReaderOrClient(), Namespace: r.Namespace, Strategies: r.strategySource(), Clock: r.Clock}
}
