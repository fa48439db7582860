package apply

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// WithRetiredVersions is desired with the versions retired (listed in the live
// CRD's status.storedVersions, which desired no longer serves) kept in its
// spec, neither served nor the storage version, as live defines them. The API
// server refuses a CRD update that drops a version status.storedVersions still
// lists; this bridge moves the storage version to desired's first, so the
// retired versions can then be forgotten (status.storedVersions trimmed: safe
// only when no object is stored in them) and desired written as it is.
func WithRetiredVersions(desired, live *apiextensionsv1.CustomResourceDefinition, retired []string) *apiextensionsv1.CustomResourceDefinition {
	out := desired.DeepCopy()
	for _, name := range retired {
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
