// Package version holds the operator's own version, stamped at build time with
// -ldflags "-X github.com/virt-operator/virt-operator/internal/version.Version=...".
package version

// Version is the operator binary's version; "devel" for an unstamped build.
var Version = "devel"
