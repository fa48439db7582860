package vmsim

import (
	"cmp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
)

// LauncherImageFromArgs is the value of --launcher-image in a virt-controller
// command line ("--launcher-image IMG" or "--launcher-image=IMG").
func LauncherImageFromArgs(args []string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, LauncherImageFlag+"="); ok && v != "" {
			return v, true
		}
		if a == LauncherImageFlag && i+1 < len(args) && args[i+1] != "" {
			return args[i+1], true
		}
	}
	return "", false
}

// LauncherImageFromDeployment is the launcher image a virt-controller Deployment
// passes to its containers (command or args).
func LauncherImageFromDeployment(d *appsv1.Deployment) (string, bool) {
	for _, c := range d.Spec.Template.Spec.Containers {
		if img, ok := LauncherImageFromArgs(append(slices.Clone(c.Command), c.Args...)); ok {
			return img, true
		}
	}
	return "", false
}

// currentLauncherImage picks the launcher image of the virt-controller Deployments
// (the first by namespace and name that has one; being deleted ones skipped), or
// fallback.
func currentLauncherImage(deployments []appsv1.Deployment, fallback string) string {
	deployments = slices.Clone(deployments)
	slices.SortFunc(deployments, func(a, b appsv1.Deployment) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for i := range deployments {
		if deployments[i].DeletionTimestamp != nil {
			continue
		}
		if img, ok := LauncherImageFromDeployment(&deployments[i]); ok {
			return img
		}
	}
	return fallback
}
