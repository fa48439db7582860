// Package storedversions owns what a CRD update does to the versions the CRD's
// objects are stored in. The API server refuses an update that drops from a
// CRD's spec a version its status.storedVersions lists, and a rollback does
// exactly that (v1.9.0 stores exports as v1, which v1.8.4 does not serve).
//
// Decide says, per CRD, what such an update needs: nothing; retiring the
// versions when the CRD has no objects; rewriting every object into a version
// both releases serve first (as Kubernetes' storage version migrator does:
// the rewrite stores each object again in the storage version); or, with
// objects and no version in common, refusing. Bridge is the CRD written before
// the rewrite, Migrate the shell that writes it, rewrites and trims
// status.storedVersions. The preflight reports the decisions; the KubeVirt
// controller carries them out before it writes a CRD.
package storedversions

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Action is what a CRD update needs for its stored versions.
type Action string

const (
	// Keep: every stored version stays served; the update goes through as it is.
	Keep Action = "Keep"
	// Retire: no object exists, so none is stored in the versions the target
	// drops: they are trimmed from status.storedVersions.
	Retire Action = "Retire"
	// Rewrite: objects exist; they are rewritten in Via, a version both the
	// live and the target CRD serve, then the versions are trimmed.
	Rewrite Action = "Rewrite"
	// Refuse: objects exist and no version is served by both: they could not
	// be read after the update.
	Refuse Action = "Refuse"
)

// Decision is the answer for one CRD.
type Decision struct {
	CRD    string
	Action Action
	// Retired are the stored versions the target does not serve.
	Retired []string
	// Via is the version the objects are rewritten in (Rewrite only): the
	// target's storage version when the live CRD serves it, else the first
	// version of the target's the live CRD serves.
	Via string
	// Objects is how many objects the CRD has (counted only when Retired is
	// not empty), Kind their kind.
	Objects int
	Kind    string
}

// Retired are the versions of stored (a live CRD's status.storedVersions)
// that desired does not serve.
func Retired(stored []string, desired *apiextensionsv1.CustomResourceDefinition) []string {
	served := servedVersions(desired)
	var out []string
	for _, s := range stored {
		if !slices.Contains(served, s) {
			out = append(out, s)
		}
	}
	return out
}

// Decide decides for the update of live to desired, given how many objects
// the CRD has (only read when a stored version is retired).
func Decide(live, desired *apiextensionsv1.CustomResourceDefinition, objects int) Decision {
	d := Decision{CRD: desired.Name, Action: Keep, Kind: desired.Spec.Names.Kind, Retired: Retired(live.Status.StoredVersions, desired)}
	if len(d.Retired) == 0 {
		return d
	}
	d.Objects = objects
	if objects == 0 {
		d.Action = Retire
		return d
	}
	d.Via = commonVersion(live, desired)
	d.Action = Rewrite
	if d.Via == "" {
		d.Action = Refuse
	}
	return d
}

// commonVersion is the version objects are rewritten in: served by both, the
// target's storage version first.
func commonVersion(live, desired *apiextensionsv1.CustomResourceDefinition) string {
	liveServed := servedVersions(live)
	common := ""
	for _, v := range desired.Spec.Versions {
		if !v.Served || !slices.Contains(liveServed, v.Name) {
			continue
		}
		if v.Storage {
			return v.Name
		}
		if common == "" {
			common = v.Name
		}
	}
	return common
}

// StorageVersion is the version a CRD stores its objects in ("" when none is
// marked).
func StorageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

func servedVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			out = append(out, v.Name)
		}
	}
	return out
}

// String names the CRD, its retired versions and what is done with them, for
// the preflight and the plan: "virtualmachineexports.export.kubevirt.io v1
// (2 VirtualMachineExports, rewritten as v1beta1)".
func (d Decision) String() string {
	head := d.CRD + " " + strings.Join(d.Retired, ", ")
	switch d.Action {
	case Retire:
		return head
	case Rewrite:
		return fmt.Sprintf("%s (%d %ss, rewritten as %s)", head, d.Objects, d.Kind, d.Via)
	case Refuse:
		return fmt.Sprintf("%s (%d %ss; no version both releases serve)", head, d.Objects, d.Kind)
	}
	return d.CRD
}

// Bridge is the CRD written before the objects are rewritten and the retired
// versions trimmed: desired, with Via (when set) as its storage version, and
// the retired versions still listed as live defines them, neither served nor
// storage (the API server refuses an update that drops a stored version, and
// reads objects stored in a version that is listed but not served).
func Bridge(desired, live *apiextensionsv1.CustomResourceDefinition, d Decision) *apiextensionsv1.CustomResourceDefinition {
	out := desired.DeepCopy()
	if d.Via != "" {
		for i := range out.Spec.Versions {
			out.Spec.Versions[i].Storage = out.Spec.Versions[i].Name == d.Via
		}
	}
	for _, name := range d.Retired {
		for _, v := range live.Spec.Versions {
			if v.Name != name {
				continue
			}
			kept := *v.DeepCopy()
			kept.Served, kept.Storage = false, false
			out.Spec.Versions = append(out.Spec.Versions, kept)
		}
	}
	return out
}
