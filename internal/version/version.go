// Package version holds the operator's own version, stamped at build time with
// -ldflags "-X github.com/virt-operator/virt-operator/internal/version.Version=..."
// (and .Repository).
package version

// Version is the operator binary's version; "devel" for an unstamped build.
var Version = "devel"

// Repository is the image repository this operator is published under
// (registry and path, without a tag): an operator image from it is this
// operator's own, whatever its tag, never a KubeVirt release's. Stamped like
// Version when the image is pushed elsewhere.
var Repository = "ghcr.io/virt-operator/virt-operator"
