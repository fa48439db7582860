package uninstall

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/strategy/trust"
)

// deleteWorkers bounds the deletes in flight at once: an uninstall's 126
// deletes one after another cost seconds of the API server's latency.
const deleteWorkers = 8

// deleteEverything deletes what the operator manages, in upstream's order:
// the CRDs first, waiting until they are gone (their instances are cleaned up
// while the components still run), then everything else in one pass. It
// returns what is still there.
func (u *Uninstaller) deleteEverything(ctx context.Context, kv *v1.KubeVirt) ([]client.Object, error) {
	scope, err := u.scope(ctx, kv)
	if err != nil {
		return nil, err
	}
	// While CRDs remain (the API server deleting their instances: with
	// RemoveWorkloads, every VM) nothing else is deleted, so nothing else is
	// listed: a poll is one list.
	crdScope, rest := scope.Split("CustomResourceDefinition")
	crds, err := apply.ListManaged(ctx, u.Live, crdScope)
	if err != nil {
		return nil, err
	}
	if len(crds) > 0 {
		if err := u.deleteAll(ctx, crds); err != nil {
			return nil, err
		}
		if err := u.nudgeStuckCRDs(ctx, crds); err != nil {
			return nil, err
		}
		return crds, nil
	}
	live, err := apply.ListManaged(ctx, u.Live, rest)
	if err != nil {
		return nil, err
	}
	groups := apply.UninstallOrder(live)
	leftovers, err := u.strategyLeftovers(ctx)
	if err != nil {
		return nil, err
	}
	groups = append(groups, leftovers)
	var remaining []client.Object
	for _, group := range groups {
		if err := u.deleteAll(ctx, group); err != nil {
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
func (u *Uninstaller) nudgeStuckCRDs(ctx context.Context, objs []client.Object) error {
	now := u.Clock.Now()
	for _, o := range objs {
		crd, ok := o.(*apiextensionsv1.CustomResourceDefinition)
		if !ok || !crdNeedsNudge(crd, now) {
			continue
		}
		patch := client.MergeFrom(crd.DeepCopy())
		metav1.SetMetaDataAnnotation(&crd.ObjectMeta, CRDCleanupRetryAnnotation, now.UTC().Format(time.RFC3339))
		if err := u.Client.Patch(ctx, crd, patch); client.IgnoreNotFound(err) != nil {
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
// deleteWorkers at a time: an uninstall's 126 deletes one after another cost
// seconds of the API server's latency. Every delete is attempted; the errors
// are returned together.
func (u *Uninstaller) deleteAll(ctx context.Context, objs []client.Object) error {
	var (
		mu   sync.Mutex
		errs []error
	)
	var g errgroup.Group // its goroutines return nil: every delete is attempted, every error kept
	g.SetLimit(deleteWorkers)
	for _, obj := range objs {
		if obj.GetDeletionTimestamp() != nil {
			continue
		}
		g.Go(func() error {
			if err := u.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
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
func (u *Uninstaller) strategyLeftovers(ctx context.Context) ([]client.Object, error) {
	cms, jobs, err := u.Strategies.List(ctx)
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
	policy, binding := trust.WriterPolicy(u.Namespace, u.Strategies.ServiceAccount)
	for _, o := range []client.Object{policy, binding} {
		switch err := u.Client.Get(ctx, client.ObjectKeyFromObject(o), o); {
		case err == nil:
			out = append(out, o)
		case !apierrors.IsNotFound(err):
			return nil, err
		}
	}
	return out, nil
}
