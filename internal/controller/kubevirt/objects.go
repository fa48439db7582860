package kubevirt

import (
	"context"
	"maps"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// writeWorkers bounds the writes of one kind in flight at once: enough to
// hide the API server's latency on an upgrade's ~80 prerequisite writes, few
// enough not to crowd out everyone else's requests.
const writeWorkers = 8

// reconcileObjects builds the desired states from the prepared strategies and
// the certificates, then rolls the target out step by step or, while the
// rollout is held or has no target to go to, keeps what runs.
func (r *Reconciler) reconcileObjects(ctx context.Context, s *scope) error {
	if !s.certificatesServed {
		return nil // the certificate controller has not caught up yet: certificatesWait
	}
	mapper := r.Client.RESTMapper()
	schedulable, err := apply.SchedulableNodes(ctx, r.Client)
	if err != nil {
		return err
	}
	for _, d := range []*deployment{s.target, s.observed} {
		if d == nil || d.prepared == nil {
			continue
		}
		apply.ScaleAPI(d.prepared, d.cfg, schedulable)
		desired, err := apply.Complete(d.prepared, d.cfg, mapper)
		if err != nil {
			return err
		}
		d.desired = desired
	}
	out := &objectsResult{}
	if s.targetReady() && !s.held() {
		err = r.rollOut(ctx, s, out)
	} else {
		err = r.keepRunning(ctx, s, out)
	}
	if err == nil {
		s.objects = out
	}
	return err
}

// rollOut writes the target's objects step by step (prerequisites, then the
// components in the path's order) and stops at the first step that has not
// rolled over; the watches on Deployments and DaemonSets bring it back.
func (r *Reconciler) rollOut(ctx context.Context, s *scope, out *objectsResult) error {
	desired := s.target.desired
	reader := r.reader()
	live, err := apply.LiveObjects(ctx, reader, desired)
	if err != nil {
		return err
	}
	apply.CarryStamps(desired, live, r.sameTemplate(ctx))
	steps := apply.Steps(desired, apply.ChoosePath(s.cfg.KubeVirtVersion, s.kv.Status.ObservedKubeVirtVersion))
	for i, step := range steps {
		if step.Name == apply.StepVirtHandler {
			handler, err := r.syncHandlerStep(ctx, s, step, live)
			if err != nil || !handler.Done {
				s.failHandler(handler)
				return err
			}
			continue
		}
		if step.Name == apply.StepExtras {
			others, err := apply.LiveOthers(ctx, reader, desired.Others)
			if err != nil {
				return err
			}
			maps.Copy(live, others)
		}
		actions := withoutCertificates(apply.Plan(step.Objects, live, s.generations()))
		s.wrote(apply.Recorded(actions))
		writes := apply.Writes(actions)
		if err := r.migrateStoredVersions(ctx, s, writes); err != nil {
			return err
		}
		if err := r.write(ctx, s, writes); err != nil {
			return err
		}
		if i == 0 {
			out.created = true
			if len(writes) > 0 {
				r.labelNamespace(ctx, s)
			}
		}
		if len(writes) > 0 && hasWorkloads(step) {
			return nil // the new generation is not observed yet
		}
		if !step.RolledOver(live) {
			return r.explainWait(ctx, s, steps[i+1:], live, step)
		}
	}
	out.rolledOver = true
	return nil
}

// keepRunning is the object phase of a rollout that may start nothing new
// (apply.PlanKeep): what runs is repaired at the version it runs, and the
// hold's step is the first step of the target that is not done. The
// virt-handler canary, once its step is reached, still runs paused: it bakes
// and judges (a crashing canary is rolled back) but replaces no pod.
func (r *Reconciler) keepRunning(ctx context.Context, s *scope, out *objectsResult) error {
	var steps []apply.Step
	var target, running []client.Object
	live := map[apply.ObjectRef]client.Object{}
	if s.targetReady() {
		steps = apply.Steps(s.target.desired, apply.ChoosePath(s.cfg.KubeVirtVersion, s.kv.Status.ObservedKubeVirtVersion))
		target = keptObjects(steps)
		if err := r.readLive(ctx, s.target.desired, live); err != nil {
			return err
		}
		apply.CarryStamps(s.target.desired, live, r.sameTemplate(ctx))
	}
	if s.observed != nil && s.observed.desired != nil {
		running = keptObjects(apply.Steps(s.observed.desired, apply.Install))
		if err := r.readLive(ctx, s.observed.desired, live); err != nil {
			return err
		}
		// What runs may carry older stamps than the observed deployment's
		// (a change that left its template alone): kept, not restarted.
		apply.CarryStamps(s.observed.desired, live, r.sameTemplate(ctx))
	}
	writes, held := apply.PlanKeep(target, running, live, s.generations())
	if err := r.write(ctx, s, withoutCertificates(writes)); err != nil {
		return err
	}
	if len(steps) == 0 {
		return nil
	}
	waiting := map[apply.ObjectRef]bool{}
	for _, ref := range held {
		waiting[ref] = true
	}
	for i, step := range steps {
		switch {
		case step.Name == apply.StepExtras:
			continue // written once the rollout goes on
		case step.Name == apply.StepVirtHandler:
			handler, err := r.syncHandlerStep(ctx, s, step, live)
			if err != nil || !handler.Done {
				s.failHandler(handler)
				s.holdAt(step.Name)
				return err
			}
		case anyRef(step.Objects, waiting) || !step.RolledOver(live):
			s.holdAt(step.Name)
			return r.explainWait(ctx, s, steps[i+1:], live, step)
		}
		if i == 0 {
			out.created = true
		}
	}
	return nil
}

// readLive adds the live copies of a desired state's objects to live.
func (r *Reconciler) readLive(ctx context.Context, desired *strategy.Strategy, live map[apply.ObjectRef]client.Object) error {
	got, err := apply.LiveObjects(ctx, r.reader(), desired)
	maps.Copy(live, got)
	return err
}

// keptObjects are the objects of steps a held rollout keeps (the cluster
// instancetypes and preferences of StepExtras wait for the rollout).
func keptObjects(steps []apply.Step) []client.Object {
	var out []client.Object
	for _, st := range steps {
		if st.Name != apply.StepExtras {
			out = append(out, st.Objects...)
		}
	}
	return out
}

// explainWait runs when step has not rolled over: it names a Deployment of the
// step that cannot get its pods on the target running, and still judges a
// virt-handler canary under way in a later step.
func (r *Reconciler) explainWait(ctx context.Context, s *scope, later []apply.Step, live map[apply.ObjectRef]client.Object, step apply.Step) error {
	failing, err := r.failingDeployment(ctx, step, live)
	if err != nil {
		return err
	}
	if err := r.judgeCanaryUnderWay(ctx, s, later, live); err != nil {
		return err
	}
	if failing != nil {
		s.fail(*failing) // after the canary's: its failure changed something
		s.requeueAfter(componentRecheck)
	}
	return nil
}

// judgeCanaryUnderWay syncs a virt-handler rollout to the target that has
// started and is not over, even while an earlier step waits (on the install
// order, virt-api can start crashing after the canary began): a crashing
// canary is still rolled back.
func (r *Reconciler) judgeCanaryUnderWay(ctx context.Context, s *scope, later []apply.Step, live map[apply.ObjectRef]client.Object) error {
	if !handlerRolloutUnderway(s) {
		return nil
	}
	for _, st := range later {
		if st.Name != apply.StepVirtHandler {
			continue
		}
		handler, err := r.syncHandlerStep(ctx, s, st, live)
		if handler.Reason != "" {
			s.failHandler(handler)
		}
		return err
	}
	return nil
}

func hasWorkloads(step apply.Step) bool {
	d, ds := step.Workloads()
	return len(d) > 0 || len(ds) > 0
}
