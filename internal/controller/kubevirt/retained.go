package kubevirt

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
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
// KeepData decides which), releases those the target has again, and deletes
// those the CR's DeleteRetainedAnnotation names; the rest stay in s.retained.
func (r *Reconciler) observeRetained(ctx context.Context, s *scope) error {
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
	allowed := deleteAllowed(s.kv)
	for i := range list.Items {
		crd := &list.Items[i]
		why, retained := crd.Annotations[metadata.RetainedAnnotation]
		switch {
		case !retained || crd.DeletionTimestamp != nil:
		case inTarget[crd.Name]:
			if err := r.annotateRetained(ctx, crd.Name, nil); err != nil {
				return err
			}
		case allowed[crd.Name]:
			if err := client.IgnoreNotFound(r.Client.Delete(ctx, crd)); err != nil {
				return fmt.Errorf("deleting retained CRD %s: %w", crd.Name, err)
			}
			s.emit(eventWarning, "RetainedCRDDeleted", "Cleanup", fmt.Sprintf("Deleted CustomResourceDefinition %s and its objects (%s), as %s asks", crd.Name, why, metadata.DeleteRetainedAnnotation))
		default:
			s.retained = append(s.retained, retainedCRD{name: crd.Name, why: why})
		}
	}
	return nil
}

// retain keeps a CRD the target no longer has because it holds data: it is
// annotated (which the DataRetained condition reads) and a Warning names it.
func (r *Reconciler) retain(ctx context.Context, s *scope, crd client.Object, counts workloads.Counts) error {
	if _, done := crd.GetAnnotations()[metadata.RetainedAnnotation]; done {
		return nil
	}
	why := fmt.Sprintf("%s; not in deployment %s", countsOf(counts, crd.GetName()), s.cfg.ID)
	if err := r.annotateRetained(ctx, crd.GetName(), &why); err != nil {
		return err
	}
	s.retained = append(s.retained, retainedCRD{name: crd.GetName(), why: why})
	s.emit(eventWarning, ReasonCRDsRetained, "Cleanup", fmt.Sprintf(
		"Kept CustomResourceDefinition %s, which deployment %s no longer has: deleting it would delete %s. Delete them, or name the CRD in the KubeVirt CR's annotation %s to delete it with them",
		crd.GetName(), s.cfg.ID, countsOf(counts, crd.GetName()), metadata.DeleteRetainedAnnotation))
	return nil
}

// annotateRetained sets (why) or removes (nil) a CRD's RetainedAnnotation.
func (r *Reconciler) annotateRetained(ctx context.Context, name string, why *string) error {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	crd.SetName(name)
	var value any
	if why != nil {
		value = *why
	}
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{metadata.RetainedAnnotation: value}}}
	raw, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if err := r.Client.Patch(ctx, crd, client.RawPatch("application/merge-patch+json", raw)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("marking CRD %s retained: %w", name, err)
	}
	return nil
}

// countsOf says how many objects of a CRD there are: "3 VirtualMachineTemplates".
func countsOf(counts workloads.Counts, crd string) string {
	for _, c := range counts {
		if c.CRD == crd {
			return workloads.Counts{c}.String()
		}
	}
	return "its objects"
}

// deleteAllowed are the CRDs the CR's DeleteRetainedAnnotation names.
func deleteAllowed(kv *v1.KubeVirt) map[string]bool {
	out := map[string]bool{}
	for _, name := range strings.Split(kv.Annotations[metadata.DeleteRetainedAnnotation], ",") {
		if name = strings.TrimSpace(name); name != "" {
			out[name] = true
		}
	}
	return out
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
