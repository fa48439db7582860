// Package metadata owns the operator's marks on the objects it manages (§2.7,
// §4.5): the exact label, annotation and finalizer strings, stamping them onto
// created objects and pod templates, and the checks that read them back — whether
// a pod, Deployment or DaemonSet belongs to the target deployment, and whether a
// pod is ready or crash-looping.
//
// The three install-strategy annotations (version, registry, identifier) are how
// readiness and the canary tell new pods from old ones, so their keys are pinned by
// tests: changing them breaks upgrades from and to other operator versions.
package metadata
