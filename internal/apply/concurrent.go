package apply

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// ApplyByKind executes the actions run by run (consecutive actions of one kind),
// in order, with up to workers writes of one run in flight at a time. An upgrade
// rewrites every prerequisite object (their install-strategy annotations change),
// 84 writes of which 19 are large CRDs; one at a time, the API server's latency
// alone holds the virt-handler canary back by seconds. Kinds keep their order
// (a RoleBinding is written only after the Roles, as with Apply); objects of one
// kind never depend on each other. Every action is attempted; the entries of the
// writes that succeeded are returned with the errors of the others, and the
// next kind is not started after an error.
func (ap *Applier) ApplyByKind(ctx context.Context, actions []Action, workers int) ([]v1.GenerationStatus, error) {
	var gens []v1.GenerationStatus
	for _, group := range groupByKind(actions) {
		g, err := ap.applyConcurrently(ctx, group, max(workers, 1))
		gens = append(gens, g...)
		if err != nil {
			return gens, err
		}
	}
	return gens, nil
}

func (ap *Applier) applyConcurrently(ctx context.Context, actions []Action, workers int) ([]v1.GenerationStatus, error) {
	var (
		mu   sync.Mutex
		gens []v1.GenerationStatus
		errs []error
	)
	var g errgroup.Group // its goroutines return nil: every write is attempted, every error kept
	g.SetLimit(workers)
	for _, a := range actions {
		g.Go(func() error {
			gen, err := ap.Apply(ctx, []Action{a})
			mu.Lock()
			defer mu.Unlock()
			gens = append(gens, gen...)
			if err != nil {
				errs = append(errs, err)
			}
			return nil
		})
	}
	_ = g.Wait()
	if len(errs) > 0 {
		return gens, fmt.Errorf("%d of %d writes failed: %w", len(errs), len(actions), errors.Join(errs...))
	}
	return gens, nil
}

// groupByKind splits actions into runs of one kind, in their order (Steps lists
// a step's objects kind by kind; a kind may come twice, as the Secrets do: CAs
// before the bundles, leaves after). OpNone actions are left out.
func groupByKind(actions []Action) [][]Action {
	var out [][]Action
	last := ""
	for _, a := range actions {
		if a.Op == OpNone {
			continue
		}
		kind := RefOf(a.Object).Kind
		if len(out) == 0 || kind != last {
			out = append(out, nil)
			last = kind
		}
		out[len(out)-1] = append(out[len(out)-1], a)
	}
	return out
}
