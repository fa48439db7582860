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
	image, err := s.launcherImage(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	var (
		plan  vmiPlan
		again reconcile.Result
	)
	if s.opts.Podless {
		if plan, err = s.planPodless(ctx, vmi, image); err != nil {
			return reconcile.Result{}, err
		}
		if ms := vmi.Status.MigrationState; plan.Status == nil && ms != nil && !ms.Completed {
			// A deleted migration sends the VMI no event: look again.
			again.RequeueAfter = s.opts.MigrationDuration
		}
	} else {
		pods, err := s.podsOf(ctx, vmi.Namespace, vmi.UID)
		if err != nil {
			return reconcile.Result{}, err
		}
		plan = planVMI(vmiInput{VMI: vmi, Pods: pods, Image: image, Now: metav1.Now()})
	}
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
	return again, nil
}

// planPodless reads what planPodlessVMI needs: the nodes and the VMI's migrations.
func (s *simulator) planPodless(ctx context.Context, vmi *v1.VirtualMachineInstance, image string) (vmiPlan, error) {
	nodes, err := s.nodes.names(ctx, s.client)
	if err != nil {
		return vmiPlan{}, err
	}
	var migs v1.VirtualMachineInstanceMigrationList
	if err := s.client.List(ctx, &migs, client.InNamespace(vmi.Namespace), client.MatchingFields{migrationsByVMIName: vmi.Name}); err != nil {
		return vmiPlan{}, err
	}
	return planPodlessVMI(podlessVMIInput{VMI: vmi, Migrations: migs.Items, Nodes: nodes, Image: image, Now: metav1.Now()}), nil
}
