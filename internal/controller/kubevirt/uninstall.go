package kubevirt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy/trust"
	"github.com/virt-operator/virt-operator/internal/workloads"
)

// A held uninstall looks again after the time it has been held so far, from
// uninstallPollMin up to blockedPollMax: one a day old costs four lists of one
// item each per blockedPollMax, not per second (the VMIs it waits for are not
// watched by this controller). A deletion under way looks again every
// uninstallPollMin: it lasts seconds, lists only the strategy's kinds where the
// strategy wrote them, and not every object it waits for sends an event (the
// ServiceAccounts are not watched).
const (
	uninstallPollMin = time.Second
	blockedPollMax   = 30 * time.Second
)

// heldPoll is when an uninstall held since heldSince looks again.
func heldPoll(heldSince, now time.Time) time.Duration {
	return min(max(now.Sub(heldSince), uninstallPollMin), blockedPollMax)
}

// reconcileDelete uninstalls: held while workloads exist under
// BlockUninstallIfWorkloadsExist (the default), else every managed object is
// deleted in upstream's order, then the finalizer goes. The admission webhook
// refuses such a delete up front; this guard holds one that got past it (the
// webhook was not yet installed, or not reachable): the deletionTimestamp is set
// by then, so the uninstall can no longer be cancelled, only held.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) error {
	kv := s.kv
	s.deletion = &deletionOutcome{}
	if kv.Status.Phase == v1.KubeVirtPhaseDeleted {
		s.deletion.done = true
		return r.removeFinalizer(ctx, kv)
	}
	// The count decides only a Deployed KubeVirt's uninstall under
	// BlockUninstallIfWorkloadsExist (as the webhook's): otherwise it is not
	// made, so a kind the operator cannot count blocks no other uninstall. A
	// deletion under way is Deleting, and goes on.
	if kv.Spec.UninstallStrategy != v1.UninstallStrategyRemoveWorkloads && kv.Status.Phase == v1.KubeVirtPhaseDeployed {
		counts, err := workloads.CountManaged(ctx, r.Client, r.APIReaderOrClient())
		if err != nil {
			return err
		}
		if !counts.None() {
			s.deletion.blocked = heldMessage(counts)
			s.requeueAfter(heldPoll(blockedSince(kv, s.now), s.now))
			return nil
		}
	}
	remaining, err := r.deleteEverything(ctx, kv)
	if err != nil {
		s.deletion.failed = err.Error()
		return err
	}
	if len(remaining) > 0 {
		s.deletion.remaining = describeRemaining(remaining)
		s.requeueAfter(uninstallPollMin)
		return nil
	}
	s.deletion.done = true
	s.emit(eventNormal, "Deleted", "Uninstall", "Every object the operator created is deleted")
	// Removing the finalizer lets the API server delete the CR; the status
	// patch that ends the pass then finds it gone, which is fine.
	return r.removeFinalizer(ctx, kv)
}

// heldMessage says why an uninstall is held: the user objects that exist, or
// the kinds that cannot be counted and why, and the override.
func heldMessage(counts workloads.Counts) string {
	what := counts.String() + " exist"
	if len(counts.Unknown()) > 0 {
		what = "user objects may exist (" + counts.String() + ")"
	}
	return fmt.Sprintf("Uninstall is held: %s and uninstallStrategy is BlockUninstallIfWorkloadsExist. "+
		"The deletion cannot be cancelled any more; delete them, or set uninstallStrategy: RemoveWorkloads to delete them with KubeVirt", what)
}

// blockedSince is when the uninstall was first held (its condition's
// transition), else now.
func blockedSince(kv *v1.KubeVirt, now time.Time) time.Time {
	if c := findCondition(kv.Status.Conditions, v1.KubeVirtConditionSynchronized); c != nil && c.Reason == ReasonDeletionBlocked {
		return c.LastTransitionTime.Time
	}
	return now
}

// uninstallScope is what an uninstall lists: the kinds and namespaces of the
// strategies status.installStrategies records as accepted (the observed
// deployment's, and the target's of an upgrade under way), and every namespace
// monitoring may be in for the target's and the observed configs. Without such
// a strategy (never installed, or its ConfigMap unreadable) every kind a
// strategy can hold is looked for, still namespaced. The last decoded
// strategies are cached, so a poll costs no decode.
func (r *Reconciler) uninstallScope(ctx context.Context, kv *v1.KubeVirt) (apply.Scope, error) {
	inForce, complete, err := r.strategySource().Accepted(ctx, kv)
	if err != nil {
		return apply.Scope{}, err
	}
	var cfgs []*deployid.Config
	if target, err := deployid.Parse(kv.Status.TargetDeploymentConfig); err == nil && kv.Status.TargetDeploymentConfig != "" {
		cfgs = append(cfgs, target)
	}
	cfgs = append(cfgs, observedConfig(kv))
	scope := managedScope(r.Namespace, cfgs, inForce...)
	if complete && len(inForce) > 0 {
		scope.Kinds = apply.StrategyKinds(inForce...)
	}
	return scope, nil
}

// deleteEverything deletes what the operator manages, in upstream's order:
// the CRDs first, waiting until they are gone (their instances are cleaned up
// while the components still run), then everything else in one pass. It
// returns what is still there.
func (r *Reconciler) deleteEverything(ctx context.Context, kv *v1.KubeVirt) ([]client.Object, error) {
	scope, err := r.uninstallScope(ctx, kv)
	if err != nil {
		return nil, err
	}
	// While CRDs remain (the API server deleting their instances: with
	// RemoveWorkloads, every VM) nothing else is deleted, so nothing else is
	// listed: a poll is one list.
	crdScope, rest := scope.Split("CustomResourceDefinition")
	crds, err := apply.ListManaged(ctx, r.APIReaderOrClient(), crdScope)
	if err != nil {
		return nil, err
	}
	if len(crds) > 0 {
		if err := r.deleteAll(ctx, crds); err != nil {
			return nil, err
		}
		if err := r.nudgeStuckCRDs(ctx, crds); err != nil {
			return nil, err
		}
		return crds, nil
	}
	live, err := apply.ListManaged(ctx, r.APIReaderOrClient(), rest)
	if err != nil {
		return nil, err
	}
	groups := apply.UninstallOrder(live)
	leftovers, err := r.strategyLeftovers(ctx)
	if err != nil {
		return nil, err
	}
	groups = append(groups, leftovers)
	var remaining []client.Object
	for _, group := range groups {
		if err := r.deleteAll(ctx, group); err != nil {
			return nil, err
		}
		remaining = append(remaining, group...)
	}
	return remaining, nil
}

// nudgeStuckCRDs touches each terminating CRD whose instance clean-up failed
// and has not been retried for crdNudgeInterval. The API server's CRD finalizer
// gives up on such a CRD when its retry meets a conflict, waiting for a change
// that never comes: a CRD deleted moments after its creation (a new release's
// CRD on an uninstall right after the upgrade) stays Terminating with "could not
// list instances: storage is (re)initializing". Any write brings the finalizer
// back, and by then the storage is ready.
func (r *Reconciler) nudgeStuckCRDs(ctx context.Context, objs []client.Object) error {
	now := r.Clock.Now()
	for _, o := range objs {
		crd, ok := o.(*apiextensionsv1.CustomResourceDefinition)
		if !ok || !crdNeedsNudge(crd, now) {
			continue
		}
		patch := client.MergeFrom(crd.DeepCopy())
		metav1.SetMetaDataAnnotation(&crd.ObjectMeta, CRDCleanupRetryAnnotation, now.UTC().Format(time.RFC3339))
		if err := r.Client.Patch(ctx, crd, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("retrying the instance clean-up of CRD %s: %w", crd.Name, err)
		}
	}
	return nil
}

// CRDCleanupRetryAnnotation records when the operator last made the API server
// retry a terminating CRD's instance clean-up.
const CRDCleanupRetryAnnotation = "kubevirt.io/virt-operator-crd-cleanup-retry"

// crdNudgeInterval spaces the retries: the finalizer's own retries, when they
// work, come sooner.
const crdNudgeInterval = 5 * time.Second

// crdNeedsNudge: terminating, its instance clean-up failed (InstanceDeletionFailed)
// at least crdNudgeInterval ago, and not retried since.
func crdNeedsNudge(crd *apiextensionsv1.CustomResourceDefinition, now time.Time) bool {
	if crd.DeletionTimestamp == nil {
		return false
	}
	failed := false
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Terminating && c.Status == apiextensionsv1.ConditionTrue && c.Reason == "InstanceDeletionFailed" {
			failed = now.Sub(c.LastTransitionTime.Time) >= crdNudgeInterval
		}
	}
	if !failed {
		return false
	}
	last, err := time.Parse(time.RFC3339, crd.Annotations[CRDCleanupRetryAnnotation])
	return err != nil || now.Sub(last) >= crdNudgeInterval
}

// deleteAll deletes objs (one uninstall group: their order does not matter),
// writeWorkers at a time: an uninstall's 126 deletes one after another cost
// seconds of the API server's latency. Every delete is attempted; the errors
// are returned together.
func (r *Reconciler) deleteAll(ctx context.Context, objs []client.Object) error {
	var (
		mu   sync.Mutex
		errs []error
	)
	var g errgroup.Group // its goroutines return nil: every delete is attempted, every error kept
	g.SetLimit(writeWorkers)
	for _, obj := range objs {
		if obj.GetDeletionTimestamp() != nil {
			continue
		}
		g.Go(func() error {
			if err := r.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !isNotFound(err) {
				mu.Lock()
				defer mu.Unlock()
				errs = append(errs, fmt.Errorf("deleting %s: %w", apply.RefOf(obj), err))
			}
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}

// describeRemaining names the first few objects an uninstall waits for, and
// why the first terminating CRD is not gone yet (the API server says so in its
// Terminating condition: instances left, or instances it failed to delete).
func describeRemaining(objs []client.Object) string {
	const shown = 3
	var names []string
	for i, o := range objs {
		if i == shown {
			names = append(names, fmt.Sprintf("and %d more", len(objs)-shown))
			break
		}
		names = append(names, apply.RefOf(o).String())
	}
	msg := fmt.Sprintf("Deletion was triggered; waiting for %d objects to go: %s", len(objs), strings.Join(names, ", "))
	if why := crdTerminating(objs); why != "" {
		msg += "; " + why
	}
	return msg
}

// crdTerminating is the first CRD's Terminating condition, as "<name>: <message>".
func crdTerminating(objs []client.Object) string {
	for _, o := range objs {
		crd, ok := o.(*apiextensionsv1.CustomResourceDefinition)
		if !ok || crd.DeletionTimestamp == nil {
			continue
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Terminating && c.Status == apiextensionsv1.ConditionTrue && c.Message != "" {
				return crd.Name + ": " + c.Message
			}
		}
	}
	return ""
}

// strategyLeftovers are the install-strategy ConfigMaps and Jobs, and the
// writer policy that guarded them.
func (r *Reconciler) strategyLeftovers(ctx context.Context) ([]client.Object, error) {
	cms, jobs, err := r.strategySource().List(ctx)
	if err != nil {
		return nil, err
	}
	var out []client.Object
	for i := range cms {
		if cms[i].DeletionTimestamp == nil {
			out = append(out, &cms[i])
		}
	}
	for i := range jobs {
		out = append(out, &jobs[i])
	}
	policy, binding := trust.WriterPolicy(r.Namespace, r.ServiceAccount)
	for _, o := range []client.Object{policy, binding} {
		switch err := r.Client.Get(ctx, client.ObjectKeyFromObject(o), o); {
		case err == nil:
			out = append(out, o)
		case !isNotFound(err):
			return nil, err
		}
	}
	return out, nil
}

// APIReaderOrClient is the uncached reader when there is one.
func (r *Reconciler) APIReaderOrClient() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}
