package kubevirt

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/workloads"
)

// ReasonCRDsRetained is the DataRetained condition's reason, and the Warning's
// when a CRD is kept.
const ReasonCRDsRetained = "CustomResourceDefinitionsRetained"

// retainedCRD is a CRD kept for its data, with what its annotation says.
type retainedCRD struct {
	name, why string
}

// observeRetained reads the CRDs kept for their data (package apply's
// DecideCRD decides which), releases those the target has again, and acts on
// those the CR's DeleteRetainedAnnotation names (deleteRetained); the rest
// stay in s.retained.
func (r *Reconciler) observeRetained(ctx context.Context, s *scope) (err error) {
	s.retained = &retainedResult{}
	defer func() {
		if err != nil {
			s.retained = nil // the phase did not conclude: DataRetained stays as it was
		}
	}()
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	if err := r.Client.List(ctx, list, client.MatchingLabels{metadata.ManagedByLabel: metadata.ManagedByValue}); err != nil {
		return fmt.Errorf("listing the managed CRDs: %w", err)
	}
	inTarget := map[string]bool{}
	if s.target != nil {
		for _, crd := range s.target.strategy.CRDs {
			inTarget[crd.Name] = true
		}
	}
	named := apply.DeleteRetainedNames(s.kv.Annotations)
	for i := range list.Items {
		crd := &list.Items[i]
		why, retained := crd.Annotations[metadata.RetainedAnnotation]
		switch {
		case !retained || crd.DeletionTimestamp != nil:
		case inTarget[crd.Name]:
			if err := r.annotateRetained(ctx, crd.Name, nil, nil); err != nil {
				return err
			}
		case named[crd.Name]:
			if err := r.deleteRetained(ctx, s, crd.Name); err != nil {
				return err
			}
		default:
			s.retain(retainedCRD{name: crd.Name, why: why})
		}
	}
	return nil
}

// deleteRetained acts on a retained CRD the CR's DeleteRetainedAnnotation
// names, as apply.DecideCRD says, reading the CRD and counting its objects
// from the API server (the cache may not show a count recorded moments ago).
// The name is removed from the annotation before the CRD is deleted or its
// count recorded anew, by a patch that fails if the CR changed since it was
// read: only a name the CR carries now acts, and only once.
func (r *Reconciler) deleteRetained(ctx context.Context, s *scope, name string) error {
	reader := r.APIReaderOrClient()
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return client.IgnoreNotFound(err)
	}
	why, retained := crd.Annotations[metadata.RetainedAnnotation]
	if !retained || crd.DeletionTimestamp != nil {
		return nil
	}
	d := apply.DataOf(crd, workloads.CountCRDs(ctx, reader, []string{name}).For, apply.DeleteRetainedNames(s.kv.Annotations))
	switch apply.DecideCRD(d) {
	case apply.FateDelete, apply.FateDeleteRetained:
		if err := r.dropDeleteRetained(ctx, s.kv, name); err != nil {
			return err
		}
		if err := r.Client.Delete(ctx, crd, client.Preconditions{UID: &crd.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting retained CRD %s (its name is already removed from %s: name it again to retry): %w", name, metadata.DeleteRetainedAnnotation, err)
		}
		s.emit(eventWarning, "RetainedCRDDeleted", "Cleanup", fmt.Sprintf("Deleted CustomResourceDefinition %s and its objects (%s), as %s asked; its name is removed from the annotation",
			name, d.Held, metadata.DeleteRetainedAnnotation))
	case apply.FateRecount:
		if err := r.dropDeleteRetained(ctx, s.kv, name); err != nil {
			return err
		}
		why = recounted(d.Held, why)
		if err := r.annotateRetained(ctx, name, &why, &d.Objects); err != nil {
			return err
		}
		s.retain(retainedCRD{name: name, why: why})
		then := "no count was recorded when it was kept"
		if d.Recorded != nil {
			then = fmt.Sprintf("it held %d when it was kept, all that naming it confirms", *d.Recorded)
		}
		s.emit(eventWarning, ReasonRetainedCRDNotDeleted, "Cleanup", fmt.Sprintf(
			"Did not delete CustomResourceDefinition %s, which %s names: it holds %s, and %s. The count is recorded and the name removed: name it again to delete them",
			name, metadata.DeleteRetainedAnnotation, d.Held, then))
	default: // named, but its objects cannot be counted
		s.retain(retainedCRD{name: name, why: why})
		s.emit(eventWarning, ReasonRetainedCRDNotDeleted, "Cleanup", fmt.Sprintf(
			"Did not delete CustomResourceDefinition %s, which %s names: its objects cannot be counted (%s)", name, metadata.DeleteRetainedAnnotation, d.Unknown))
	}
	return nil
}

// ReasonRetainedCRDNotDeleted is the Warning's reason when the CR's
// DeleteRetainedAnnotation names a retained CRD the operator does not delete.
const ReasonRetainedCRDNotDeleted = "RetainedCRDNotDeleted"

// recounted is a retained CRD's annotation with what it holds now in place
// of what it held: "5 VirtualMachineTemplates; not in deployment 5c1e".
func recounted(held, why string) string {
	if i := strings.LastIndex(why, "; not in deployment "); i >= 0 {
		return held + why[i:]
	}
	return held
}

// dropDeleteRetained removes crd from the CR's DeleteRetainedAnnotation, from
// a copy with an optimistic lock: a CR changed since it was read (the name
// removed meanwhile) fails the patch, and the pass is retried on the new one.
func (r *Reconciler) dropDeleteRetained(ctx context.Context, kv *v1.KubeVirt, crd string) error {
	if !apply.DeleteRetainedNames(kv.Annotations)[crd] {
		return nil
	}
	obj := kv.DeepCopy()
	patch := client.MergeFromWithOptions(kv.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if rest := apply.WithoutDeleteRetained(obj.Annotations[metadata.DeleteRetainedAnnotation], crd); rest != "" {
		obj.Annotations[metadata.DeleteRetainedAnnotation] = rest
	} else {
		delete(obj.Annotations, metadata.DeleteRetainedAnnotation)
	}
	if err := r.Client.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("removing %s from %s: %w", crd, metadata.DeleteRetainedAnnotation, err)
	}
	kv.Annotations, kv.ResourceVersion = obj.Annotations, obj.ResourceVersion
	return nil
}

// retain keeps a CRD the target no longer has because it holds data, or its
// objects cannot be counted: it is annotated with what it holds (which the
// DataRetained condition reads) and their count, and a Warning names it. Its
// name is first removed from the CR's DeleteRetainedAnnotation: one written
// before the retention (left over from an earlier clean-up) confirms nothing.
func (r *Reconciler) retain(ctx context.Context, s *scope, crd client.Object, d apply.CRDData) error {
	if _, done := crd.GetAnnotations()[metadata.RetainedAnnotation]; done {
		return nil
	}
	if err := r.dropDeleteRetained(ctx, s.kv, crd.GetName()); err != nil {
		return err
	}
	held, count, risk := d.Held, &d.Objects, d.Held
	if d.Unknown != "" {
		held, count = "objects not counted: "+d.Unknown, nil
		risk = "its objects, which cannot be counted (" + d.Unknown + ")"
	}
	why := fmt.Sprintf("%s; not in deployment %s", held, s.cfg.ID)
	if err := r.annotateRetained(ctx, crd.GetName(), &why, count); err != nil {
		return err
	}
	s.retain(retainedCRD{name: crd.GetName(), why: why})
	s.emit(eventWarning, ReasonCRDsRetained, "Cleanup", fmt.Sprintf(
		"Kept CustomResourceDefinition %s, which deployment %s no longer has: deleting it would delete %s. Delete them, or name the CRD in the KubeVirt CR's annotation %s to delete it with them",
		crd.GetName(), s.cfg.ID, risk, metadata.DeleteRetainedAnnotation))
	return nil
}

// annotateRetained sets (why, and count when known) or removes (nil) a CRD's
// RetainedAnnotation and RetainedCountAnnotation.
func (r *Reconciler) annotateRetained(ctx context.Context, name string, why *string, count *int) error {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	crd.SetName(name)
	var value, n any
	if why != nil {
		value = *why
	}
	if count != nil {
		n = strconv.Itoa(*count)
	}
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{metadata.RetainedAnnotation: value, metadata.RetainedCountAnnotation: n}}}
	raw, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, crd, client.RawPatch("application/merge-patch+json", raw)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("marking CRD %s retained: %w", name, err)
	}
	return nil
}

// retainedCondition is the DataRetained condition of the CRDs kept; nil when none is.
func retainedCondition(retained []retainedCRD) *v1.KubeVirtCondition {
	if len(retained) == 0 {
		return nil
	}
	sort.Slice(retained, func(i, j int) bool { return retained[i].name < retained[j].name })
	var parts []string
	for _, c := range retained {
		parts = append(parts, fmt.Sprintf("%s (%s)", c.name, c.why))
	}
	return &v1.KubeVirtCondition{Type: v1.KubeVirtConditionDataRetained, Status: "True", Reason: ReasonCRDsRetained,
		Message: fmt.Sprintf("Kept for their data, though the deployment no longer has them: %s. Delete their objects, or name the CRDs in the annotation %s to delete them with their objects",
			strings.Join(parts, ", "), metadata.DeleteRetainedAnnotation)}
}
