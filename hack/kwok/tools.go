//go:build tools

// Package kwok only records which command `make cluster-bins` builds.
package kwok

import _ "sigs.k8s.io/kwok/cmd/kwok"
