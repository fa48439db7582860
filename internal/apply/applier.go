package apply

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// FieldManager is the server-side apply field manager of every write.
const FieldManager = "virt-operator"

// ErrWaitingForDeletion: a Recreate deleted the old object, which is not gone
// yet (e.g. a finalizer); the create happens on a later reconcile.
var ErrWaitingForDeletion = errors.New("waiting for the old object to be deleted")

// ObjectWriter writes one OpCreate or OpUpdate action and returns the object as
// the API server returned it, or nil when it chose not to write.
type ObjectWriter interface {
	Write(ctx context.Context, a Action) (client.Object, error)
}

// Applier executes actions against the API server.
type Applier struct {
	Client client.Client
	// DaemonSets, when set, writes DaemonSet creates and updates instead of the
	// Applier (the virt-handler canary rollout); it may call ServerSideApply.
	DaemonSets ObjectWriter
}

// Apply executes the actions in order, skipping OpNone, and returns the
// status.generations entries of the objects it wrote (merge them with
// MergeGenerations). It stops at the first error, which names the object; the
// entries of the writes that succeeded before it are returned with it.
func (ap *Applier) Apply(ctx context.Context, actions []Action) ([]v1.GenerationStatus, error) {
	var gens []v1.GenerationStatus
	for _, a := range actions {
		switch a.Op {
		case OpNone:
			continue
		case OpRecord:
			gens = append(gens, Recorded([]Action{a})...)
			continue
		}
		written, err := ap.do(ctx, a)
		if err != nil {
			return gens, fmt.Errorf("%s %s: %w", a.Op, RefOf(a.Object), err)
		}
		if written == nil {
			continue
		}
		if g, ok := generationOf(a.Object, written.GetGeneration(), a.Object.GetAnnotations()[DesiredHashAnnotation]); ok {
			gens = append(gens, g)
		}
	}
	return gens, nil
}

func (ap *Applier) do(ctx context.Context, a Action) (client.Object, error) {
	switch a.Op {
	case OpDelete:
		return nil, ap.delete(ctx, a.Object)
	case OpRecreate:
		if err := ap.delete(ctx, a.Live); err != nil {
			return nil, err
		}
		gone := newLike(a.Object)
		err := ap.Client.Get(ctx, client.ObjectKeyFromObject(a.Object), gone)
		if err == nil {
			return nil, ErrWaitingForDeletion
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
		return ap.ServerSideApply(ctx, a.Object)
	case OpCreate, OpUpdate:
		if _, ok := a.Object.(*appsv1.DaemonSet); ok && ap.DaemonSets != nil {
			return ap.DaemonSets.Write(ctx, a)
		}
		if a.Op == OpUpdate && leavesOutWebhooks(a.Object, a.Live) {
			u, err := applyBody(a.Object, ap.Client.Scheme())
			if err != nil {
				return nil, err
			}
			return ap.replaceWebhooks(ctx, u, a.Live)
		}
		return ap.ServerSideApply(ctx, a.Object)
	}
	return nil, fmt.Errorf("unknown action %q", a.Op)
}

// ServerSideApply applies obj with FieldManager, forcing ownership of every
// field it sets, and returns the object the server returned (unstructured). An
// object server-side apply cannot express (repeatedKeys) is created or replaced
// instead.
func (ap *Applier) ServerSideApply(ctx context.Context, obj client.Object) (client.Object, error) {
	u, err := applyBody(obj, ap.Client.Scheme())
	if err != nil {
		return nil, err
	}
	if repeatedKeys(obj) {
		return ap.createOrReplace(ctx, u)
	}
	if err := ap.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return nil, err
	}
	return u, nil
}

// DryRun is obj as the API server would store it after this operator's write
// of it (ServerSideApply, or the replacement of an object server-side apply
// cannot express); nothing is stored. It tells whether a write would change
// what another manager wrote.
// The result is typed as obj is.
func (ap *Applier) DryRun(ctx context.Context, obj client.Object) (client.Object, error) {
	scheme := ap.Client.Scheme()
	u, err := applyBody(obj, scheme)
	if err != nil {
		return nil, err
	}
	if repeatedKeys(obj) {
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(u.GroupVersionKind())
		if err := ap.Client.Get(ctx, client.ObjectKeyFromObject(u), live); err != nil {
			return nil, err
		}
		u.SetResourceVersion(live.GetResourceVersion())
		err = ap.Client.Update(ctx, u, client.FieldOwner(FieldManager), client.DryRunAll)
	} else {
		err = ap.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership, client.DryRunAll)
	}
	if err != nil {
		return nil, err
	}
	typed, err := scheme.New(u.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
		return nil, err
	}
	out, ok := typed.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", u.GroupVersionKind())
	}
	return out, nil
}

// createOrReplace writes u with a plain create, or an update of the whole object at
// the live resourceVersion.
func (ap *Applier) createOrReplace(ctx context.Context, u *unstructured.Unstructured) (client.Object, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	err := ap.Client.Get(ctx, client.ObjectKeyFromObject(u), live)
	switch {
	case apierrors.IsNotFound(err):
		return u, ap.Client.Create(ctx, u, client.FieldOwner(FieldManager))
	case err != nil:
		return nil, err
	}
	u.SetResourceVersion(live.GetResourceVersion())
	return u, ap.Client.Update(ctx, u, client.FieldOwner(FieldManager))
}

// repeatedKeys reports an object whose pod template repeats a container port
// (containerPort and protocol): server-side apply refuses lists whose map keys
// repeat, and upstream's virt-api declares port 8443 twice, as virt-api and as
// metrics (the metrics Service targets it by the second name). The API server
// itself accepts such a pod.
func repeatedKeys(obj client.Object) bool {
	tmpl := PodTemplate(obj)
	if tmpl == nil {
		return false
	}
	for _, c := range tmpl.Spec.Containers {
		seen := map[string]bool{}
		for _, p := range c.Ports {
			key := fmt.Sprintf("%d/%s", p.ContainerPort, p.Protocol)
			if seen[key] {
				return true
			}
			seen[key] = true
		}
	}
	return false
}

// delete removes obj (this very object: UID precondition) in the background;
// NotFound is success.
func (ap *Applier) delete(ctx context.Context, obj client.Object) error {
	if obj == nil {
		return nil
	}
	opts := []client.DeleteOption{client.PropagationPolicy(metav1.DeletePropagationBackground)}
	if uid := obj.GetUID(); uid != "" {
		opts = append(opts, client.Preconditions{UID: &uid})
	}
	err := ap.Client.Delete(ctx, obj, opts...)
	if apierrors.IsNotFound(err) || (apierrors.IsConflict(err) && obj.GetUID() != "") {
		// Conflict on the UID precondition: the object was already replaced.
		return nil
	}
	return err
}

// applyBody is obj as an apply configuration: every field it sets (nulls
// dropped: "don't care", not "remove"), no status, no server-set metadata.
func applyBody(obj client.Object, scheme *runtime.Scheme) (*unstructured.Unstructured, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		var err error
		if gvk, err = apiutil.GVKForObject(obj, scheme); err != nil {
			return nil, err
		}
	}
	m, err := contentOf(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		for _, k := range []string{"creationTimestamp", "resourceVersion", "uid", "generation", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"} {
			delete(meta, k)
		}
	}
	u := &unstructured.Unstructured{Object: pruneNulls(m).(map[string]any)}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

func pruneNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			t[k] = pruneNulls(e)
		}
	case []any:
		for i, e := range t {
			t[i] = pruneNulls(e)
		}
	}
	return v
}
