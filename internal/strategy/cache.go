package strategy

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/virt-operator/virt-operator/internal/metadata"
)

// The strategy ConfigMap cache, as pure functions over a listing of the
// install-strategy ConfigMaps in the KubeVirt namespace.
//
// Rule: for one deployment ID, the strategy in force is the NEWEST ConfigMap with
// that ID (FindForID). Everything else follows from it:
//
//   - The operator detects the monitoring namespace on every reconcile and asks
//     Fresh(FindForID(id), live). When the answer changed since the strategy was
//     generated (or was never recorded), it regenerates the strategy for the same
//     ID; the new ConfigMap is newer, so it becomes the one in force. Until then
//     the stale one stays usable: it differs only in the monitoring objects.
//   - Dump mode writes a ConfigMap only when FindForID's result is not Fresh for
//     the answer it detected, so running it twice writes once.
//   - Obsolete keeps exactly the ConfigMap FindForID picks for each kept ID, so
//     garbage collection can never delete the strategy in use, and the stale one
//     goes as soon as its replacement exists.
//
// We deliberately do not "prefer the ConfigMap whose monitoring annotation
// matches the live answer" among several for one ID: that choice would depend on
// the live answer while garbage collection does not know it, so the two could
// disagree and GC could delete the ConfigMap being used. If monitoring flips back
// before GC ran, the operator simply regenerates once more.
//
// Terminating ConfigMaps are ignored everywhere: they cannot be used and deleting
// them again would be a needless write. Upstream also matches a ConfigMap without
// an identifier by version and registry; we do not, because an ID is not a
// version and registry pair: such legacy ConfigMaps are only garbage-collected.

// FindForID returns the install-strategy ConfigMap in force for id: the newest
// one whose identifier annotation is id (ties broken by name, so the choice is
// deterministic). ConfigMaps without the install-strategy label are ignored.
// It returns nil when there is none, or when id is "".
func FindForID(cms []corev1.ConfigMap, id string) *corev1.ConfigMap {
	if id == "" {
		return nil
	}
	var best *corev1.ConfigMap
	for i := range cms {
		cm := &cms[i]
		if !usable(cm) || cm.Annotations[metadata.InstallStrategyIdentifierAnnotation] != id {
			continue
		}
		if best == nil || newer(cm, best) {
			best = cm
		}
	}
	return best
}

// Fresh reports whether cm was generated with the monitoring namespace
// monitorNamespace ("" for none). A ConfigMap that never recorded its answer is
// not fresh, so it is regenerated once. A nil cm is not fresh.
func Fresh(cm *corev1.ConfigMap, monitorNamespace string) bool {
	meta, ok := Meta(cm)
	return ok && meta.MonitorRecorded && meta.MonitorNamespace == monitorNamespace
}

// Obsolete returns the install-strategy ConfigMaps to delete, in input order:
//   - those whose identifier is neither targetID nor observedID (including those
//     without an identifier); with both IDs "" (uninstall), all of them;
//   - for targetID and observedID, every one but the one FindForID picks: the
//     duplicates of a race, and strategies replaced after a monitoring change.
//
// ConfigMaps without the install-strategy label, and terminating ones, are never
// returned.
func Obsolete(cms []corev1.ConfigMap, targetID, observedID string) []corev1.ConfigMap {
	keep := map[string]*corev1.ConfigMap{}
	for _, id := range []string{targetID, observedID} {
		if cm := FindForID(cms, id); cm != nil {
			keep[id] = cm
		}
	}
	var out []corev1.ConfigMap
	for i := range cms {
		cm := &cms[i]
		if !usable(cm) {
			continue
		}
		if kept, ok := keep[cm.Annotations[metadata.InstallStrategyIdentifierAnnotation]]; ok && kept == cm {
			continue
		}
		out = append(out, *cm)
	}
	return out
}

// usable: an install-strategy ConfigMap that is not being deleted.
func usable(cm *corev1.ConfigMap) bool {
	return IsStrategyConfigMap(cm) && cm.DeletionTimestamp == nil
}

// newer orders by creationTimestamp, then by name. The API server stamps whole
// seconds, so the name is what separates two ConfigMaps made in one second.
func newer(a, b *corev1.ConfigMap) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name > b.Name
}
