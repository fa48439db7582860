package apply

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// orphanOrder is the order stale objects are deleted in (§4.12): webhooks first,
// since a stale webhook could block the other deletes, workloads before their
// RBAC.
var orphanOrder = []string{
	"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService", "Secret", "ConfigMap",
	"ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy", "CustomResourceDefinition",
	"DaemonSet", "Deployment", "PodDisruptionBudget", "Service", "ClusterRoleBinding", "ClusterRole",
	"RoleBinding", "Role", "ServiceAccount", "SecurityContextConstraints", "Route", "PrometheusRule", "ServiceMonitor",
}

// uninstallOrder is §1.9's: CRDs first (their deletion removes the workloads,
// processed by the still-running controllers), then the control plane.
var uninstallOrder = []string{
	"CustomResourceDefinition", "DaemonSet", "PodDisruptionBudget", "Deployment",
	"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService", "Service",
	"ServiceMonitor", "PrometheusRule", "ClusterRoleBinding", "ClusterRole", "RoleBinding", "Role",
	"ServiceAccount", "Secret", "ConfigMap", "SecurityContextConstraints", "Route",
	"ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy",
}

// Orphans are the live objects the operator manages (metadata.IsManaged) whose
// reference is not desired, in deletion order. Install-strategy ConfigMaps are
// never orphans: they have their own lifecycle. (Upstream's temporary webhook,
// virt-operator-tmp-webhook-*, is one: this operator never creates it, so one
// left by upstream's operator on a takeover would otherwise stay for good.)
// Delete them (Deletions) only once every step has rolled over: until then the
// old components may still need them.
func Orphans(desired []ObjectRef, live []client.Object) []client.Object {
	want := make(map[ObjectRef]bool, len(desired))
	for _, r := range desired {
		want[r] = true
	}
	var out []client.Object
	for _, o := range live {
		if !metadata.IsManaged(o) || want[RefOf(o)] || ownLifecycle(o) {
			continue
		}
		out = append(out, o)
	}
	sortByKind(out, orphanOrder)
	return out
}

// KeepData splits orphans into those to delete and the CRDs to keep because
// their objects are user data: a CRD is deleted only when data (by CRD name)
// says it holds no user object (FateDelete); one data does not name was not
// counted, and is kept. Deleting a CRD deletes every object of it, a loss no
// upgrade, rollback or gate change may cause on its own: a kept CRD goes only
// on the admin's word, as DecideCRD allows.
func KeepData(orphans []client.Object, data map[string]CRDData) (deleted, kept []client.Object) {
	for _, o := range orphans {
		if RefOf(o).Kind == "CustomResourceDefinition" {
			d, counted := data[o.GetName()]
			if !counted || DecideCRD(d) != FateDelete {
				kept = append(kept, o)
				continue
			}
		}
		deleted = append(deleted, o)
	}
	return deleted, kept
}

// CRDData is what the fate of a managed CRD the target no longer has depends
// on (DecideCRD).
type CRDData struct {
	// Objects is how many user objects the CRD holds, Held names them ("3
	// VirtualMachineTemplates"); Unknown says why they could not be counted
	// ("" when they were).
	Objects       int
	Held, Unknown string
	// Retained: the CRD carries metadata.RetainedAnnotation. Recorded is the
	// count its retention recorded (metadata.RetainedCountAnnotation), nil
	// when none was (not countable then, or kept by an older operator).
	Retained bool
	Recorded *int
	// Named: the KubeVirt CR's DeleteRetainedAnnotation names it.
	Named bool
}

// DataOf is the CRDData of crd (a live CRD's metadata, for its retention):
// count says how many objects a CRD holds and what they are, or why they
// could not be counted (package workloads' Counts.For); named are the CRDs
// the KubeVirt CR's DeleteRetainedAnnotation names.
func DataOf(crd metav1.Object, count func(crd string) (n int, held, unknown string), named map[string]bool) CRDData {
	d := CRDData{Named: named[crd.GetName()]}
	d.Objects, d.Held, d.Unknown = count(crd.GetName())
	_, d.Retained = crd.GetAnnotations()[metadata.RetainedAnnotation]
	if v, err := strconv.Atoi(crd.GetAnnotations()[metadata.RetainedCountAnnotation]); err == nil && v >= 0 {
		d.Recorded = &v
	}
	return d
}

// DataOfEach is DataOf of every CRD in crds (live CRDs' metadata), by name.
func DataOfEach(crds []metav1.PartialObjectMetadata, count func(crd string) (n int, held, unknown string), named map[string]bool) map[string]CRDData {
	out := make(map[string]CRDData, len(crds))
	for i := range crds {
		out[crds[i].Name] = DataOf(&crds[i], count, named)
	}
	return out
}

// CRDFate is what becomes of a managed CRD the target no longer has.
type CRDFate string

const (
	// FateDelete: it holds no user object; it is deleted.
	FateDelete CRDFate = "Delete"
	// FateRetain: it holds user objects, or they cannot be counted: it is kept
	// and annotated retained, with their count. Its name is removed from the
	// CR's DeleteRetainedAnnotation first: a name written before the retention
	// (left over from an earlier clean-up) confirms nothing.
	FateRetain CRDFate = "Retain"
	// FateKeep: retained already, and staying: not named, or named while its
	// objects cannot be counted.
	FateKeep CRDFate = "Keep"
	// FateDeleteRetained: retained, named, and holding at most the objects its
	// retention recorded: its name is removed, then it is deleted with them.
	FateDeleteRetained CRDFate = "DeleteRetained"
	// FateRecount: retained and named, but holding more objects than its
	// retention recorded, or no count was recorded: the name confirmed
	// deleting fewer. It is kept; its name is removed, then the count recorded
	// anew, for the admin to confirm by naming it again.
	FateRecount CRDFate = "Recount"
)

// DecideCRD decides the fate of a managed CRD the target no longer has. The
// only CRDs ever deleted hold no user object, or were retained before the
// CR's annotation named them and hold no more objects than then.
func DecideCRD(d CRDData) CRDFate {
	switch {
	case d.Unknown == "" && d.Objects == 0:
		return FateDelete
	case !d.Retained:
		return FateRetain
	case !d.Named || d.Unknown != "":
		return FateKeep
	case d.Recorded == nil || d.Objects > *d.Recorded:
		return FateRecount
	}
	return FateDeleteRetained
}

// Describe says what becomes of the CRD, for the preflight and the plan:
// "kept for its data (3 VirtualMachineTemplates)".
func (d CRDData) Describe() string {
	switch DecideCRD(d) {
	case FateDelete:
		return "deleted (no objects)"
	case FateDeleteRetained:
		return fmt.Sprintf("deleted with its objects (%s), as %s asks", d.Held, metadata.DeleteRetainedAnnotation)
	case FateRecount:
		then := "no count was recorded when it was kept"
		if d.Recorded != nil {
			then = fmt.Sprintf("it held %d when it was kept, all that naming it confirms", *d.Recorded)
		}
		return fmt.Sprintf("kept for its data (%s): %s; its name is removed from %s, to be given again to delete them", d.Held, then, metadata.DeleteRetainedAnnotation)
	}
	if d.Unknown != "" {
		return "kept: its objects cannot be counted (" + d.Unknown + ")"
	}
	return "kept for its data (" + d.Held + ")"
}

// DeleteRetainedNames are the CRDs a KubeVirt CR's DeleteRetainedAnnotation
// (in annotations) names.
func DeleteRetainedNames(annotations map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, name := range strings.Split(annotations[metadata.DeleteRetainedAnnotation], ",") {
		if name = strings.TrimSpace(name); name != "" {
			out[name] = true
		}
	}
	return out
}

// WithoutDeleteRetained is a DeleteRetainedAnnotation's value without the
// name crd; "" when no name is left.
func WithoutDeleteRetained(value, crd string) string {
	var rest []string
	for _, name := range strings.Split(value, ",") {
		if name = strings.TrimSpace(name); name != "" && name != crd {
			rest = append(rest, name)
		}
	}
	return strings.Join(rest, ",")
}

func ownLifecycle(o client.Object) bool {
	_, ok := o.GetLabels()[metadata.InstallStrategyLabel]
	return ok
}

// UninstallOrder groups every object by kind in the order §1.9 deletes them;
// empty groups are left out and unknown kinds come last. Delete group by group;
// the first group is the CRDs: wait until they are gone (their finalizers let
// virt-controller and virt-handler clean up the workloads) before the next.
func UninstallOrder(objs []client.Object) [][]client.Object {
	sorted := append([]client.Object(nil), objs...)
	sortByKind(sorted, uninstallOrder)
	var out [][]client.Object
	for i, o := range sorted {
		if i == 0 || kindOf(o) != kindOf(sorted[i-1]) {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], o)
	}
	return out
}

// sortByKind orders objs by the rank of their kind in order (unknown kinds last,
// by name), then by namespace and name: deterministic whatever the listing order.
func sortByKind(objs []client.Object, order []string) {
	rank := make(map[string]int, len(order))
	for i, k := range order {
		rank[k] = i
	}
	rankOf := func(o client.Object) int {
		if r, ok := rank[kindOf(o)]; ok {
			return r
		}
		return len(order)
	}
	sort.SliceStable(objs, func(i, j int) bool {
		ri, rj := rankOf(objs[i]), rankOf(objs[j])
		if ri != rj {
			return ri < rj
		}
		return RefOf(objs[i]).String() < RefOf(objs[j]).String()
	})
}
