package vmsim

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func (s *simulator) reconcileVM(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	u := newUnstructuredVM()
	if err := s.client.Get(ctx, req.NamespacedName, u); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	vm := &v1.VirtualMachine{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, vm); err != nil {
		return reconcile.Result{}, err
	}
	in := vmInput{VM: vm, SkipTransitional: s.opts.SkipTransitionalPhases}
	if running, found, err := unstructured.NestedBool(u.Object, "spec", "running"); err == nil && found {
		in.Running = &running
	}
	vmi := &v1.VirtualMachineInstance{}
	switch err := s.client.Get(ctx, req.NamespacedName, vmi); {
	case err == nil:
		in.VMI = vmi
	case !apierrors.IsNotFound(err):
		return reconcile.Result{}, err
	}
	plan, err := planVM(in)
	if err != nil {
		s.log.Error("VM cannot start", "vm", req.String(), "error", err)
		return reconcile.Result{}, nil // a broken template stays broken until edited
	}
	if plan.DeleteVMI {
		err := s.client.Delete(ctx, vmi, client.Preconditions{UID: &vmi.UID})
		if client.IgnoreNotFound(err) != nil {
			return done(err)
		}
		s.log.Info("VMI deleted to restart its VM", "vm", req.String(), "phase", vmi.Status.Phase)
	}
	if plan.CreateVMI != nil {
		switch err := s.client.Create(ctx, plan.CreateVMI); {
		case err == nil:
			s.log.Info("VMI created for its VM", "vm", req.String())
		case !apierrors.IsAlreadyExists(err): // else: the cache is behind
			return reconcile.Result{}, err
		}
	}
	if plan.Status != nil {
		// Only the fields the simulator owns: the status keeps unknown fields.
		patch := client.MergeFrom(u.DeepCopy())
		for field, value := range map[string]any{
			"printableStatus": plan.Status.PrintableStatus, "created": plan.Status.Created, "ready": plan.Status.Ready,
		} {
			if err := unstructured.SetNestedField(u.Object, value, "status", field); err != nil {
				return reconcile.Result{}, err
			}
		}
		if err := s.client.Status().Patch(ctx, u, patch); err != nil {
			return done(err)
		}
	}
	return reconcile.Result{}, nil
}
