// Package workloads counts the user data an uninstall would delete: the
// objects of every kind whose CustomResourceDefinition the operator manages
// (the release's CRDs), but for the objects the operator installs itself (the
// cluster instancetypes and preferences) and the kinds that are a workload's
// own bookkeeping (migrations: their VMI is counted). The uninstall guard counts
// them twice: at admission, where a delete of the KubeVirt CR is refused, and
// in the controller, for a delete that got past it. The same counts tell which
// CRD an upgrade must keep because it holds data.
//
// A kind is counted through its CRD as the API server has it now: the CRD is
// read, and its objects listed, metadata only, in a version it serves. A
// cached REST mapping is never asked for the version: controller-runtime's
// keeps a group's preferred version until a lookup misses, so after a
// rollback it names a version the API server no longer serves.
//
// A count fails closed. A kind whose objects cannot be listed (forbidden, a
// 404 for a CRD that exists, any other error) is unknown, never 0: its
// KindCount says why, and every deletion that needs the count is held. A CRD
// that is gone, or being deleted, counts 0: the API server deletes its objects
// and refuses new ones whatever a guard decides.
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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// The guard lists the objects of every managed CRD, metadata only: the
// permissions are generated for the builtin releases' CRDs (hack/rbacgen). A
// delegated release's new kind is not granted: it counts as unknown, and the
// upgrade's preflight names it with the permission to add (Unlistable).

// Kind is one kind of user data: the resource an uninstall deletes with its CRD.
type Kind struct {
	// CRD is the CustomResourceDefinition's name, <plural>.<group>.
	CRD string
	// GVK is the kind in a version the CRD serves (empty when the CRD could
	// not be read).
	GVK        schema.GroupVersionKind
	Namespaced bool
}

// first are upstream's workload kinds, counted (and named) first, in upstream's order.
var first = []string{"virtualmachineinstances.kubevirt.io", "virtualmachines.kubevirt.io",
	"virtualmachineinstancereplicasets.kubevirt.io", "virtualmachinepools.pool.kubevirt.io"}

// notUserData are kinds whose objects belong to a workload counted anyway.
var notUserData = map[string]string{
	"virtualmachineinstancemigrations.kubevirt.io": "a migration belongs to its VMI, which is counted",
}

// KindCount is how many objects of one kind exist, or why that is not known.
type KindCount struct {
	Kind
	N int
	// Unknown says why the kind could not be counted; "" when N is its count.
	Unknown string
}

// Known reports whether N is the kind's count.
func (k KindCount) Known() bool { return k.Unknown == "" }

// String is "3 VirtualMachineTemplates", or "VirtualMachineTemplates: cannot
// be counted: <why>".
func (k KindCount) String() string {
	if !k.Known() {
		return k.name() + ": cannot be counted: " + k.Unknown
	}
	return fmt.Sprintf("%d %s", k.N, k.name())
}

// name is the kind's plural, or the CRD's name when its kind is not known.
func (k KindCount) name() string {
	if k.GVK.Kind == "" {
		return "the objects of CRD " + k.CRD
	}
	return plural(k.GVK.Kind)
}

// Counts are the counts of every kind counted, upstream's workload kinds first.
type Counts []KindCount

// Total is the number of objects of the kinds counted (the unknown ones
// left out: see Unknown).
func (c Counts) Total() int {
	n := 0
	for _, k := range c {
		n += k.N
	}
	return n
}

// Unknown are the kinds that could not be counted.
func (c Counts) Unknown() Counts {
	var out Counts
	for _, k := range c {
		if !k.Known() {
			out = append(out, k)
		}
	}
	return out
}

// None reports whether it is known that no object exists: every kind counted,
// and every count 0.
func (c Counts) None() bool { return c.Total() == 0 && len(c.Unknown()) == 0 }

// Of is the count of the kind whose CRD is named crd; false when it was not
// counted.
func (c Counts) Of(crd string) (KindCount, bool) {
	for _, k := range c {
		if k.CRD == crd {
			return k, true
		}
	}
	return KindCount{}, false
}

// For is what the counts say of the CRD named crd: how many objects it holds
// and what they are ("3 VirtualMachineTemplates"), or why that is not known
// ("not counted" when it was not).
func (c Counts) For(crd string) (n int, held, unknown string) {
	k, counted := c.Of(crd)
	switch {
	case !counted:
		return 0, "", "not counted"
	case !k.Known():
		return 0, "", k.Unknown
	}
	return k.N, k.String(), ""
}

// String names the kinds present with their counts, then those that could
// not be counted with why: "3 VirtualMachineInstances, 1 VirtualMachineSnapshots;
// VirtualMachineSnapshotSchedules: cannot be counted: forbidden: ..."; "" when
// it is known there is none.
func (c Counts) String() string {
	var present, unknown []string
	for _, k := range c {
		switch {
		case !k.Known():
			unknown = append(unknown, k.String())
		case k.N > 0:
			present = append(present, k.String())
		}
	}
	if len(present) > 0 {
		unknown = append([]string{strings.Join(present, ", ")}, unknown...)
	}
	return strings.Join(unknown, "; ")
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

// ManagedCRDs are the CRDs the operator manages, as r holds their metadata
// (the operator's cache does), sorted by name.
func ManagedCRDs(ctx context.Context, r client.Reader) ([]metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinitionList"))
	if err := r.List(ctx, list, client.MatchingLabels{metadata.ManagedByLabel: metadata.ManagedByValue}); err != nil {
		return nil, fmt.Errorf("listing the managed CRDs: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items, nil
}

func namesOf(crds []metav1.PartialObjectMetadata) []string {
	out := make([]string, len(crds))
	for i, crd := range crds {
		out[i] = crd.Name
	}
	return out
}

// KindOf is the kind a CRD defines, in the version its objects are listed
// in: the first it serves (a list in any served version returns every
// object). A CRD that serves no version has no objects anyone can list: an
// error.
func KindOf(crd *apiextensionsv1.CustomResourceDefinition) (Kind, error) {
	k := Kind{CRD: crd.Name, Namespaced: crd.Spec.Scope != apiextensionsv1.ClusterScoped}
	for _, v := range crd.Spec.Versions {
		if v.Served {
			k.GVK = schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
			return k, nil
		}
	}
	k.GVK = schema.GroupVersionKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
	return k, fmt.Errorf("CRD %s serves no version its objects could be listed in", crd.Name)
}

// CountCRDs counts the user data of the CRDs named, upstream's workload kinds
// first, then by name; a kind whose objects are no user data counts 0 unread.
// r must read the API server (full CRDs, then the objects' metadata), not a
// cache.
func CountCRDs(ctx context.Context, r client.Reader, crds []string) Counts {
	names := slices.Clone(crds)
	sort.Strings(names)
	sort.SliceStable(names, func(i, j int) bool { return rank(names[i]) < rank(names[j]) })
	out := make(Counts, 0, len(names))
	for _, name := range names {
		if _, skip := notUserData[name]; skip {
			out = append(out, KindCount{Kind: Kind{CRD: name}})
			continue
		}
		out = append(out, countCRD(ctx, r, name))
	}
	return out
}

func rank(crd string) int {
	if i := slices.Index(first, crd); i >= 0 {
		return i
	}
	return len(first)
}

// countCRD reads the CRD, then counts its user data.
func countCRD(ctx context.Context, r client.Reader, name string) KindCount {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	switch err := r.Get(ctx, client.ObjectKey{Name: name}, crd); {
	case apierrors.IsNotFound(err):
		return KindCount{Kind: Kind{CRD: name}} // gone, and its objects with it
	case err != nil:
		return KindCount{Kind: Kind{CRD: name}, Unknown: "reading the CRD: " + err.Error()}
	}
	k, err := KindOf(crd)
	switch {
	case crd.DeletionTimestamp != nil:
		return KindCount{Kind: k} // being deleted: its objects go, new ones are refused
	case err != nil:
		return KindCount{Kind: k, Unknown: err.Error()}
	}
	n, err := countUserData(ctx, r, k)
	if err != nil {
		return KindCount{Kind: k, Unknown: why(k, err)}
	}
	return KindCount{Kind: k, N: n}
}

// why says why a kind's list failed.
func why(k Kind, err error) string {
	gv := k.GVK.GroupVersion().String()
	switch {
	case apierrors.IsForbidden(err):
		return "forbidden: " + err.Error()
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("the API server answers 404 for %s, which CRD %s serves: %v", gv, k.CRD, err)
	case meta.IsNoMatchError(err):
		return fmt.Sprintf("the API server does not serve %s yet, which CRD %s serves: %v", gv, k.CRD, err)
	}
	return err.Error()
}

// installedByOperator: the objects the operator installs are the cluster
// instancetypes and preferences, cluster-scoped, labelled as its own and
// stamped with the deployment they were rendered for. A namespaced copy of
// one (kubectl get -o yaml keeps the label) is user data.
func installedByOperator(o metav1.Object, namespaced bool) bool {
	return !namespaced && metadata.IsManaged(o) && o.GetAnnotations()[metadata.InstallStrategyIdentifierAnnotation] != ""
}

// countUserData counts k's objects but those the operator installed. A
// namespaced kind, or a cluster-scoped one without such objects, is counted
// by a list of one item, the API server saying how many more there are; a
// cluster-scoped kind with them is listed page by page, metadata only.
func countUserData(ctx context.Context, r client.Reader, k Kind) (int, error) {
	if !k.Namespaced {
		ours, _, err := listPage(ctx, r, k, "", 1, client.MatchingLabelsSelector{Selector: metadata.ManagedSelector()})
		if err != nil {
			return 0, err
		}
		if len(ours.Items) > 0 {
			return countEach(ctx, r, k, "", func(o metav1.Object) bool { return !installedByOperator(o, k.Namespaced) })
		}
	}
	return countAll(ctx, r, k)
}

// CountObjects is how many objects of a CRD exist, whoever made them, in any
// version (the API server does not say which one each is stored in), failing
// as CountCRDs does: any error is returned, a 404 included. r must read the
// API server.
func CountObjects(ctx context.Context, r client.Reader, crd *apiextensionsv1.CustomResourceDefinition) (int, error) {
	k, err := KindOf(crd)
	if err != nil {
		return 0, err
	}
	n, err := countAll(ctx, r, k)
	if err != nil {
		return 0, fmt.Errorf("counting the objects of CRD %s in %s: %w", crd.Name, k.GVK.GroupVersion(), err)
	}
	return n, nil
}

// pageSize bounds the pages of a count that lists objects one by one.
const pageSize = 500

// countAll counts every object of k by a list of one item and the count the
// API server gives of the rest. Where it gives none (it may leave it out),
// the rest are counted page by page: a count is exact.
func countAll(ctx context.Context, r client.Reader, k Kind) (int, error) {
	l, rest, err := listPage(ctx, r, k, "", 1)
	switch {
	case err != nil:
		return 0, err
	case rest != nil || l.GetContinue() == "":
		n := len(l.Items)
		if rest != nil {
			n += int(*rest)
		}
		return n, nil
	}
	more, err := countEach(ctx, r, k, l.GetContinue(), func(metav1.Object) bool { return true })
	return len(l.Items) + more, err
}

// countEach lists k's objects page by page from cont and counts those counted says.
func countEach(ctx context.Context, r client.Reader, k Kind, cont string, counted func(metav1.Object) bool, opts ...client.ListOption) (int, error) {
	n := 0
	for {
		l, _, err := listPage(ctx, r, k, cont, pageSize, opts...)
		if err != nil {
			return 0, err
		}
		for i := range l.Items {
			if counted(&l.Items[i]) {
				n++
			}
		}
		if cont = l.GetContinue(); cont == "" {
			return n, nil
		}
	}
}

// listPage lists one page of k's objects' metadata, with the count of the
// rest when the API server gives it.
func listPage(ctx context.Context, r client.Reader, k Kind, cont string, limit int64, opts ...client.ListOption) (*metav1.PartialObjectMetadataList, *int64, error) {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(k.GVK.GroupVersion().WithKind(k.GVK.Kind + "List"))
	opts = append(opts, client.Limit(limit))
	if cont != "" {
		opts = append(opts, client.Continue(cont))
	}
	if err := r.List(ctx, l, opts...); err != nil {
		return nil, nil, err
	}
	return l, l.GetRemainingItemCount(), nil
}

// CountManaged counts the user data of every CRD the operator manages: crds
// reads their metadata (the operator's cache), objects the API server. The
// error is the managed CRDs' listing's; a kind that cannot be counted is
// unknown in the counts.
func CountManaged(ctx context.Context, crds, objects client.Reader) (Counts, error) {
	managed, err := ManagedCRDs(ctx, crds)
	if err != nil {
		return nil, err
	}
	return CountCRDs(ctx, objects, namesOf(managed)), nil
}

// InRemovedCRDs reads the managed CRDs (crds: the operator's cache) that a
// target strategy does not have (keep), and counts their user data (objects:
// the API server). An upgrade, rollback or gate change keeps those that hold
// data (package apply's DecideCRD).
func InRemovedCRDs(ctx context.Context, crds, objects client.Reader, keep []*apiextensionsv1.CustomResourceDefinition) (
	removed []metav1.PartialObjectMetadata, counts Counts, err error) {
	managed, err := ManagedCRDs(ctx, crds)
	if err != nil {
		return nil, nil, err
	}
	kept := map[string]bool{}
	for _, crd := range keep {
		kept[crd.Name] = true
	}
	for _, crd := range managed {
		if !kept[crd.Name] {
			removed = append(removed, crd)
		}
	}
	return removed, CountCRDs(ctx, objects, namesOf(removed)), nil
}
