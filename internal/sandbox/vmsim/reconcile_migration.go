package vmsim

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func (s *simulator) reconcileMigration(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	m := &v1.VirtualMachineInstanceMigration{}
	if err := s.client.Get(ctx, req.NamespacedName, m); err != nil {
		if apierrors.IsNotFound(err) {
			return s.abortDeleted(ctx, req)
		}
		return reconcile.Result{}, err
	}
	in := migrationInput{Migration: m, Duration: s.opts.MigrationDuration, Now: time.Now()}
	if !migrationFinished(m.Status.Phase) {
		refusing, err := s.refusingNodes(ctx)
		if err != nil {
			return reconcile.Result{}, err
		}
		in.Refusing = refusing
	}
	if s.opts.Podless {
		return s.reconcilePodlessMigration(ctx, in)
	}
	vmi := &v1.VirtualMachineInstance{}
	switch err := s.client.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.VMIName}, vmi); {
	case err == nil:
		in.VMI = vmi
		pods, err := s.podsOf(ctx, vmi.Namespace, vmi.UID)
		if err != nil {
			return reconcile.Result{}, err
		}
		in.Pods = pods
	case !apierrors.IsNotFound(err):
		return reconcile.Result{}, err
	}
	// A replaced migration (same name, new UID) leaves its target pods behind.
	if res, err := s.abortStale(ctx, req, m.UID); err != nil || res.RequeueAfter > 0 {
		return res, err
	}
	if !migrationFinished(m.Status.Phase) {
		image, err := s.launcherImage(ctx)
		if err != nil {
			return reconcile.Result{}, err
		}
		in.Image = image
	}
	return s.execute(ctx, m.Namespace, m, in.VMI, planMigration(in))
}

// execute carries out a migration plan in its order; m is nil for an abort.
func (s *simulator) execute(ctx context.Context, namespace string, m *v1.VirtualMachineInstanceMigration, vmi *v1.VirtualMachineInstance, p migrationPlan) (reconcile.Result, error) {
	if p.CreatePod != nil {
		if err := s.createPod(ctx, p.CreatePod); err != nil {
			return reconcile.Result{}, err
		}
	}
	if p.ConsumeFailure {
		vmi.Annotations = consumeFailure(vmi.Annotations, m.UID)
		if err := s.client.Update(ctx, vmi); err != nil {
			return done(err)
		}
	}
	if p.VMIStatus != nil {
		vmi.Status = *p.VMIStatus
		if err := s.client.Update(ctx, vmi); err != nil { // the main resource: a VMI has no status subresource
			return done(err)
		}
	}
	if p.Status != nil && m != nil {
		m.Status = *p.Status
		if err := s.client.Status().Update(ctx, m); err != nil {
			return done(err)
		}
		s.log.Debug("migration phase", "migration", m.Namespace+"/"+m.Name, "phase", m.Status.Phase)
		if migrationFinished(m.Status.Phase) {
			s.log.Info("migration "+string(m.Status.Phase), "migration", m.Namespace+"/"+m.Name, "vmi", m.Spec.VMIName,
				"elapsed", time.Since(m.CreationTimestamp.Time).Round(time.Millisecond))
		}
	}
	if err := s.deletePods(ctx, namespace, p.DeletePods); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: p.RequeueAfter}, nil
}

// abortDeleted undoes a migration that is gone: its target pods (found by the
// migration name they carry) whose migration never finished.
func (s *simulator) abortDeleted(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return s.abortStale(ctx, req, "")
}

// abortStale aborts the migrations named req whose UID is not current: their
// target pods are deleted unless the VMI runs in them, and the VMI forgets them.
func (s *simulator) abortStale(ctx context.Context, req reconcile.Request, current types.UID) (reconcile.Result, error) {
	var list corev1.PodList
	if err := s.client.List(ctx, &list, client.InNamespace(req.Namespace), client.MatchingFields{podsByMigration: req.Name}); err != nil {
		return reconcile.Result{}, err
	}
	for i := range list.Items {
		pod := &list.Items[i]
		uid := types.UID(pod.Labels[MigrationJobLabel])
		if uid == "" || uid == current {
			continue
		}
		var vmi *v1.VirtualMachineInstance
		got := &v1.VirtualMachineInstance{}
		switch err := s.client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Labels[VMNameLabel]}, got); {
		case err == nil && string(got.UID) == pod.Labels[CreatedByLabel]:
			vmi = got
		case err != nil && !apierrors.IsNotFound(err):
			return reconcile.Result{}, err
		}
		p := planAbort(uid, vmi, []corev1.Pod{*pod})
		if p.VMIStatus == nil && len(p.DeletePods) == 0 {
			continue
		}
		s.log.Info("migration aborted", "migration", req.String(), "uid", uid, "deletePods", p.DeletePods)
		if res, err := s.execute(ctx, pod.Namespace, nil, vmi, p); err != nil || res.RequeueAfter > 0 {
			return res, err
		}
	}
	return reconcile.Result{}, nil
}

// reconcilePodlessMigration carries out planPodlessMigration (Options.Podless).
func (s *simulator) reconcilePodlessMigration(ctx context.Context, in migrationInput) (reconcile.Result, error) {
	m := in.Migration
	vmi := &v1.VirtualMachineInstance{}
	switch err := s.client.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.VMIName}, vmi); {
	case err == nil:
		in.VMI = vmi
	case !apierrors.IsNotFound(err):
		return reconcile.Result{}, err
	}
	nodes, err := s.nodes.names(ctx, s.client)
	if err != nil {
		return reconcile.Result{}, err
	}
	if in.Image, err = s.launcherImage(ctx); err != nil {
		return reconcile.Result{}, err
	}
	return s.execute(ctx, m.Namespace, m, in.VMI, planPodlessMigration(in, nodes))
}

// refusingNodes are the nodes whose virt-handler refuses migrations
// (RefusingNodes), from the cache of virt-handler pods.
func (s *simulator) refusingNodes(ctx context.Context) (map[string]string, error) {
	var list corev1.PodList
	if err := s.client.List(ctx, &list, client.MatchingLabels{AppLabel: HandlerApp}); err != nil {
		return nil, err
	}
	return RefusingNodes(list.Items), nil
}
