package kubevirt

import (
	"context"
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/strategysource"
)

// syncStrategies is the strategy phase (package strategysource): the target's
// and the observed deployment's trusted strategies, each prepared
// (customized) for its config. A customization that does not apply leaves
// the target unprepared: nothing of it is written until the spec changes,
// and what runs is kept.
func (r *Reconciler) syncStrategies(ctx context.Context, s *scope) error {
	res, err := r.strategySource().Load(ctx, strategysource.Input{KubeVirt: s.kv, Target: s.cfg, Now: s.now})
	if err != nil {
		return err
	}
	s.strategies = &res
	s.Merge(res.Report)
	if t := res.Target; t != nil {
		s.target = &deployment{cfg: t.Config, strategy: t.Strategy}
		if s.target.prepared, err = apply.Prepare(t.Strategy, t.Config); err != nil {
			var patchErr *apply.PatchError
			if !errors.As(err, &patchErr) {
				return err
			}
			s.fail(problem{Reason: ReasonInvalidCustomization, Message: patchErr.Error(), Warning: ReasonInvalidCustomization})
		}
	}
	if o := res.Observed; o != nil {
		prepared, err := apply.Prepare(o.Strategy, o.Config)
		if err != nil {
			log.FromContext(ctx).Info("the observed deployment's strategy cannot be prepared", "error", err.Error())
			return nil
		}
		s.observed = &deployment{cfg: o.Config, strategy: o.Strategy, prepared: prepared}
	}
	return nil
}

// strategySource is the Reconciler's strategy source, made on first use from
// its fields.
func (r *Reconciler) strategySource() *strategysource.Source {
	r.sourceOnce.Do(func() {
		r.source = &strategysource.Source{Client: r.Client, APIReader: r.APIReaderOrClient(), Namespace: r.Namespace, ServiceAccount: r.ServiceAccount}
	})
	return r.source
}
