//go:build tools

// Package api only records which kubevirt.io/api packages make generate reads (the
// order KubeVirt v1.9.0's own generator runs controller-gen on them is packages.txt).
package api

import (
	_ "kubevirt.io/api/backup/v1alpha1"
	_ "kubevirt.io/api/clone/v1alpha1"
	_ "kubevirt.io/api/clone/v1beta1"
	_ "kubevirt.io/api/core/v1"
	_ "kubevirt.io/api/export/v1"
	_ "kubevirt.io/api/export/v1beta1"
	_ "kubevirt.io/api/instancetype/v1beta1"
	_ "kubevirt.io/api/migrations/v1alpha1"
	_ "kubevirt.io/api/plugin/v1alpha1"
	_ "kubevirt.io/api/pool/v1alpha1"
	_ "kubevirt.io/api/pool/v1beta1"
	_ "kubevirt.io/api/snapshot/v1alpha1"
	_ "kubevirt.io/api/snapshot/v1beta1"
)
