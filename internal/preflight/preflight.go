// Package preflight owns the checks an upgrade must pass before its first
// step: the step crosses at most one minor release (path.go), the target
// release supports the cluster's Kubernetes, the target's
// images can be pulled on the nodes (a short pre-pull pod per node pool), the
// CRD changes keep every stored version served, the CRDs the target drops are
// named with what becomes of their objects, a delegated target's CRDs whose
// objects the operator may not list (so cannot count) are named, and GA
// feature gates the CR still lists are named. The checks are pure functions of what was observed; the KubeVirt
// controller runs the pre-pull pods, records the results in
// status.preflight and the Upgradeable condition, and holds the upgrade while
// a check fails or runs, unless the CR's skip annotation names it.
package preflight

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/version"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/release"
	"github.com/virt-operator/virt-operator/internal/storedversions"
)

// Check names (also what the skip annotation lists).
const (
	CheckKubernetes     = "KubernetesVersion"
	CheckImages         = "ImagePull"
	CheckStoredVersions = "CRDStoredVersions"
	CheckDeprecated     = "DeprecatedFields"
	CheckRemovedCRDs    = "RemovedCRDs"
	CheckCountable      = "CountableCRDs"
)

// SkipAnnotation on the KubeVirt CR lists checks (comma-separated) whose
// failure does not hold the upgrade; "all" skips every check.
const SkipAnnotation = "kubevirt.io/virt-operator-skip-preflight"

// Result states.
const (
	Passed  = "Passed"
	Failed  = "Failed"
	Running = "Running"
)

// Kubernetes checks the cluster's minor version against the release's range:
// older than the range fails (KubeVirt then needs APIs the cluster lacks);
// newer passes with a note (not yet tested upstream, usually fine).
func Kubernetes(r *release.Release, major, minor int) v1.PreflightCheck {
	c := v1.PreflightCheck{Name: CheckKubernetes, State: Passed}
	k := r.Kubernetes
	switch {
	case k.Min == 0:
		c.Message = "the release names no Kubernetes range"
	case major != 1 || minor < k.Min:
		c.State = Failed
		c.Message = fmt.Sprintf("KubeVirt %s supports Kubernetes 1.%d to 1.%d; the cluster runs %d.%d", r.Version, k.Min, k.Max, major, minor)
	case minor > k.Max:
		c.Message = fmt.Sprintf("Kubernetes %d.%d is newer than the 1.%d KubeVirt %s was tested with", major, minor, k.Max, r.Version)
	default:
		c.Message = fmt.Sprintf("Kubernetes %d.%d is within 1.%d-1.%d", major, minor, k.Min, k.Max)
	}
	return c
}

// KubernetesOf is Kubernetes for the server's reported version.
func KubernetesOf(r *release.Release, info *version.Info) v1.PreflightCheck {
	major, _ := strconv.Atoi(strings.TrimRight(info.Major, "+"))
	minor, _ := strconv.Atoi(strings.TrimRight(info.Minor, "+"))
	return Kubernetes(r, major, minor)
}

// StoredVersions fails when a target CRD stops serving a version its live
// CRD lists in status.storedVersions while objects exist and no version is
// served by both (storedversions.Refuse): they could not be read after the
// update. It passes, saying so, where the operator retires such a version (no
// objects) or rewrites the objects in a version both serve before the update.
func StoredVersions(decisions []storedversions.Decision) v1.PreflightCheck {
	c := v1.PreflightCheck{Name: CheckStoredVersions, State: Passed, Message: "every stored version stays served"}
	by := map[storedversions.Action][]string{}
	for _, d := range decisions {
		by[d.Action] = append(by[d.Action], d.String())
	}
	var parts []string
	if r := by[storedversions.Rewrite]; len(r) > 0 {
		parts = append(parts, "rewritten in a version both releases serve: "+strings.Join(sorted(r), ", "))
	}
	if r := by[storedversions.Retire]; len(r) > 0 {
		parts = append(parts, "retired (no objects stored): "+strings.Join(sorted(r), ", "))
	}
	if lost := by[storedversions.Refuse]; len(lost) > 0 {
		c.State, c.Message = Failed, "stored versions the target no longer serves, with objects stored: "+strings.Join(sorted(lost), ", ")
		return c
	}
	if len(parts) > 0 {
		c.Message = "stored versions the target no longer serves, " + strings.Join(parts, "; ")
	}
	return c
}

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}

// Deprecated names the feature gates the CR lists that the target release has
// made GA (listing them does nothing); it never blocks.
func Deprecated(r *release.Release, kv *v1.KubeVirt) v1.PreflightCheck {
	c := v1.PreflightCheck{Name: CheckDeprecated, State: Passed, Message: "none"}
	dc := kv.Spec.Configuration.DeveloperConfiguration
	if dc == nil {
		return c
	}
	var ga []string
	for _, g := range dc.FeatureGates {
		if r.Gates[g] == release.GA {
			ga = append(ga, g)
		}
	}
	if len(ga) > 0 {
		c.Message = "feature gates GA in " + r.Version + " (listing them has no effect): " + strings.Join(ga, ", ")
	}
	return c
}

// RemovedCRDs names the managed CRDs the target no longer has (removed, by
// name) and what becomes of each, as package apply's DecideCRD says: an empty
// one is deleted; one that holds user objects, or whose objects cannot be
// counted, is kept; a kept one the CR's delete-retained annotation names is
// deleted only while it holds no more objects than when it was kept. It never
// blocks: nothing is lost either way.
func RemovedCRDs(removed map[string]apply.CRDData) v1.PreflightCheck {
	c := v1.PreflightCheck{Name: CheckRemovedCRDs, State: Passed, Message: "none"}
	var parts []string
	for name, d := range removed {
		parts = append(parts, name+" "+d.Describe())
	}
	if len(parts) > 0 {
		sort.Strings(parts)
		c.Message = strings.Join(parts, "; ")
	}
	return c
}

// CountableCRDs names the target's CRDs whose objects the operator may not
// list (unlistable, by name), so cannot count: a release delegated to its own
// operator image may add kinds the RBAC generated for the builtin releases
// does not grant. Their counts are unknown, never 0: an uninstall under
// BlockUninstallIfWorkloadsExist is refused, and such a CRD is kept whenever a
// later target drops it. err is why the operator could not ask. It never
// blocks: nothing is lost.
func CountableCRDs(unlistable []string, err error) v1.PreflightCheck {
	c := v1.PreflightCheck{Name: CheckCountable, State: Passed, Message: "the operator may list the objects of every CRD of the target"}
	switch {
	case err != nil:
		c.Message = "not checked: " + err.Error()
	case len(unlistable) > 0:
		var rules []string
		for _, name := range sorted(unlistable) {
			resource, group, _ := strings.Cut(name, ".")
			rules = append(rules, fmt.Sprintf("%s (list on resource %s in API group %s)", name, resource, group))
		}
		c.Message = "the operator may not list the objects of " + strings.Join(rules, ", ") +
			": it cannot count them, so an uninstall under BlockUninstallIfWorkloadsExist is refused while its ClusterRole lacks these rules, " +
			"and a CRD among them that a later target drops is kept"
	}
	return c
}

// IsSkipped reports whether the CR's annotation skips the named check.
func IsSkipped(kv *v1.KubeVirt, name string) bool {
	for _, s := range strings.Split(kv.Annotations[SkipAnnotation], ",") {
		if s = strings.TrimSpace(s); s == "all" || s == name {
			return true
		}
	}
	return false
}

// Verdict is what the checks decide: whether the upgrade may start, and if
// not, why (the first check that fails or runs). Names in the skip annotation
// that are no check are named too: a typo must not look like an override.
func Verdict(kv *v1.KubeVirt, checks []v1.PreflightCheck) (ok bool, reason, message string) {
	for _, c := range checks {
		if IsSkipped(kv, c.Name) {
			continue
		}
		switch c.State {
		case Failed:
			return false, c.Name, c.Name + " failed: " + c.Message + " (override: annotate the KubeVirt CR " + SkipAnnotation + "=" + c.Name + ")" + unknownSkips(kv)
		case Running:
			return false, c.Name, c.Name + " is running: " + c.Message
		}
	}
	return true, "", ""
}

// unknownSkips names the skip annotation's entries that are no check, or "".
func unknownSkips(kv *v1.KubeVirt) string {
	var unknown []string
	for _, s := range strings.Split(kv.Annotations[SkipAnnotation], ",") {
		switch s = strings.TrimSpace(s); s {
		case "", "all", CheckUpgradePath, CheckKubernetes, CheckImages, CheckStoredVersions, CheckDeprecated, CheckRemovedCRDs, CheckCountable:
		default:
			unknown = append(unknown, strconv.Quote(s))
		}
	}
	if len(unknown) == 0 {
		return ""
	}
	return "; " + SkipAnnotation + " names no check " + strings.Join(unknown, ", ")
}
