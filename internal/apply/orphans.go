package apply

import (
	"sort"

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
// their objects are user data: a CRD with objects (instances, by CRD name) is
// kept unless allowDelete names it. Deleting such a CRD deletes every object
// of it, a loss no upgrade, rollback or gate change may cause on its own.
func KeepData(orphans []client.Object, instances map[string]int, allowDelete map[string]bool) (deleted, kept []client.Object) {
	for _, o := range orphans {
		if RefOf(o).Kind == "CustomResourceDefinition" && instances[o.GetName()] > 0 && !allowDelete[o.GetName()] {
			kept = append(kept, o)
			continue
		}
		deleted = append(deleted, o)
	}
	return deleted, kept
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
