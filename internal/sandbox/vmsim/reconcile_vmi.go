package vmsim

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func (s *simulator) reconcileVMI(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	vmi := &v1.VirtualMachineInstance{}
	if err := s.client.Get(ctx, req.NamespacedName, vmi); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	pods, err := s.podsOf(ctx, vmi.Namespace, vmi.UID)
	if err != nil {
		return reconcile.Result{}, err
	}
	image, err := s.launcherImage(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	plan := planVMI(vmiInput{VMI: vmi, Pods: pods, Image: image, Now: metav1.Now(), SkipTransitional: s.opts.SkipTransitionalPhases})
	if plan.CreatePod != nil {
		if err := s.createPod(ctx, plan.CreatePod); err != nil {
			return reconcile.Result{}, err
		}
		s.log.Debug("launcher pod created", "vmi", req.String(), "pod", plan.CreatePod.Name, "image", image)
	}
	if plan.Status != nil {
		vmi.Status = *plan.Status
		if err := s.client.Update(ctx, vmi); err != nil { // the main resource: a VMI has no status subresource
			return done(err)
		}
		if vmi.Status.Phase == v1.VMISucceeded {
			s.log.Info("VMI shut down: its launcher pod is gone", "vmi", req.String())
		}
	}
	return reconcile.Result{}, nil
}
