// Package workloads counts the user data an uninstall would delete: the
// objects of every kind whose CustomResourceDefinition the operator manages
// (the release's CRDs, so a release that adds a kind is counted without a
// change here), but for the objects the operator installs itself (cluster
// instancetypes and preferences) and the kinds that are a workload's own
// bookkeeping (migrations: their VMI is counted). The uninstall guard counts
// them twice: at admission, where a delete of the KubeVirt CR is refused, and
// in the controller, for a delete that got past it. The same counts tell which
// CRD an upgrade must keep because it holds data.
package workloads

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// The guard lists the objects of every managed CRD, metadata only: the
// permissions are generated for every release's CRDs (hack/rbacgen).

// Kind is one kind of user data: the resource an uninstall deletes with its CRD.
type Kind struct {
	// CRD is the CustomResourceDefinition's name, <plural>.<group>.
	CRD string
	GVK schema.GroupVersionKind
}

// first are upstream's workload kinds, counted (and named) first, in upstream's order.
var first = []string{"virtualmachineinstances.kubevirt.io", "virtualmachines.kubevirt.io",
	"virtualmachineinstancereplicasets.kubevirt.io", "virtualmachinepools.pool.kubevirt.io"}

// notUserData are kinds whose objects belong to a workload counted anyway.
var notUserData = map[string]string{
	"virtualmachineinstancemigrations.kubevirt.io": "a migration belongs to its VMI, which is counted",
}

// KindCount is how many objects of one kind exist.
type KindCount struct {
	Kind
	N int
}

// Counts are the counts of every kind counted, upstream's workload kinds first.
type Counts []KindCount

// Total is the number of objects of every kind.
func (c Counts) Total() int {
	n := 0
	for _, k := range c {
		n += k.N
	}
	return n
}

// Workloads is how many of the counts are upstream's workload kinds (VMIs,
// VMs, VMI replica sets, pools).
func (c Counts) Workloads() int {
	n := 0
	for _, k := range c {
		if slices.Contains(first, k.CRD) {
			n += k.N
		}
	}
	return n
}

// Of is the count of the kind whose CRD is named crd (0 when not counted).
func (c Counts) Of(crd string) int {
	for _, k := range c {
		if k.CRD == crd {
			return k.N
		}
	}
	return 0
}

// String names the kinds present with their counts, "3 VirtualMachineInstances,
// 1 VirtualMachineSnapshots"; "" when there is none.
func (c Counts) String() string {
	var parts []string
	for _, k := range c {
		if k.N > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", k.N, plural(k.GVK.Kind)))
		}
	}
	return strings.Join(parts, ", ")
}

// plural is a kind's plural as a message gives it.
func plural(kind string) string {
	switch {
	case strings.HasSuffix(kind, "y"):
		return strings.TrimSuffix(kind, "y") + "ies"
	case strings.HasSuffix(kind, "s"):
		return kind + "es"
	}
	return kind + "s"
}

// ManagedCRDs are the names of the CRDs the operator manages, from r (the
// operator's cache holds their metadata), sorted.
func ManagedCRDs(ctx context.Context, r client.Reader) ([]string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	if err := r.List(ctx, list, client.MatchingLabels{metadata.ManagedByLabel: metadata.ManagedByValue}); err != nil {
		return nil, fmt.Errorf("listing the managed CRDs: %w", err)
	}
	var names []string
	for _, crd := range list.Items {
		names = append(names, crd.Name)
	}
	sort.Strings(names)
	return names, nil
}

// KindsOf are the user-data kinds of the CRDs named, upstream's workload kinds
// first, then by name; a CRD the mapper does not serve (gone, or being
// deleted) is left out.
func KindsOf(crds []string, mapper meta.RESTMapper) ([]Kind, error) {
	names := slices.Clone(crds)
	sort.SliceStable(names, func(i, j int) bool { return rank(names[i]) < rank(names[j]) })
	var out []Kind
	for _, name := range names {
		if _, skip := notUserData[name]; skip {
			continue
		}
		resource, group, _ := strings.Cut(name, ".")
		gvk, err := mapper.KindFor(schema.GroupVersionResource{Group: group, Resource: resource})
		switch {
		case meta.IsNoMatchError(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("the kind of CRD %s: %w", name, err)
		}
		out = append(out, Kind{CRD: name, GVK: gvk})
	}
	return out, nil
}

func rank(crd string) int {
	if i := slices.Index(first, crd); i >= 0 {
		return i
	}
	return len(first)
}

// Selectors of the objects the operator installed, and of the others.
var (
	ours    = labels.SelectorFromSet(labels.Set{metadata.ManagedByLabel: metadata.ManagedByValue})
	notOurs = func() labels.Selector {
		req, _ := labels.NewRequirement(metadata.ManagedByLabel, selection.NotEquals, []string{metadata.ManagedByValue})
		return labels.NewSelector().Add(*req)
	}()
)

// Count counts the objects of each kind cluster-wide, but for those the
// operator installed, with metadata-only lists whose cost does not grow with
// the number of objects: one item per list, the API server reporting how many
// more there are. Only a kind the operator installs objects of (the cluster
// instancetypes and preferences) is listed whole, without its objects. A kind
// whose CRD is gone counts 0, whether the client's REST mapping knows it is
// gone (no match) or not yet (the API server answers 404, as it does all
// through an uninstall's CRD deletion).
func Count(ctx context.Context, r client.Reader, kinds []Kind) (Counts, error) {
	out := make(Counts, 0, len(kinds))
	for _, k := range kinds {
		n, err := countKind(ctx, r, k)
		switch {
		case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("counting %s: %w", plural(k.GVK.Kind), err)
		}
		out = append(out, KindCount{Kind: k, N: n})
	}
	return out, nil
}

func countKind(ctx context.Context, r client.Reader, k Kind) (int, error) {
	list := func(opts ...client.ListOption) (*metav1.PartialObjectMetadataList, error) {
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(k.GVK.GroupVersion().WithKind(k.GVK.Kind + "List"))
		return l, r.List(ctx, l, opts...)
	}
	installed, err := list(client.MatchingLabelsSelector{Selector: ours}, client.Limit(1))
	if err != nil {
		return 0, err
	}
	if len(installed.Items) > 0 {
		others, err := list(client.MatchingLabelsSelector{Selector: notOurs})
		return len(others.Items), err
	}
	all, err := list(client.Limit(1))
	if err != nil {
		return 0, err
	}
	n := len(all.Items)
	if rest := all.GetRemainingItemCount(); rest != nil {
		n += int(*rest)
	}
	return n, nil
}

// CountManaged counts the user data of every CRD the operator manages.
func CountManaged(ctx context.Context, crds, objects client.Reader, mapper meta.RESTMapper) (Counts, error) {
	names, err := ManagedCRDs(ctx, crds)
	if err != nil {
		return nil, err
	}
	kinds, err := KindsOf(names, mapper)
	if err != nil {
		return nil, err
	}
	return Count(ctx, objects, kinds)
}

// InRemovedCRDs reads the managed CRDs (crds: the operator's cache) and, for
// those a target strategy does not have (keep), what objects they hold (by
// CRD name: "3 VirtualMachineTemplates"; an empty one is absent). An upgrade,
// rollback or gate change keeps the ones that hold data.
func InRemovedCRDs(ctx context.Context, crds, objects client.Reader, mapper meta.RESTMapper, keep []*apiextensionsv1.CustomResourceDefinition) (
	managed []string, held map[string]string, err error) {
	if managed, err = ManagedCRDs(ctx, crds); err != nil {
		return nil, nil, err
	}
	kept := map[string]bool{}
	for _, crd := range keep {
		kept[crd.Name] = true
	}
	var removed []string
	for _, name := range managed {
		if !kept[name] {
			removed = append(removed, name)
		}
	}
	kinds, err := KindsOf(removed, mapper)
	if err != nil {
		return nil, nil, err
	}
	counts, err := Count(ctx, objects, kinds)
	if err != nil {
		return nil, nil, err
	}
	held = map[string]string{}
	for _, c := range counts {
		if c.N > 0 {
			held[c.CRD] = Counts{c}.String()
		}
	}
	return managed, held, nil
}
