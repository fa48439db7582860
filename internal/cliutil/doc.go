// Package cliutil holds what the commands of both binaries share, virt-operator's
// (package cli) and virt-sandbox's (package sandbox/sandboxcli): exit codes and
// usage errors, the operator's log set-up, its default namespace and reading a
// KubeVirt from a file. It imports nothing of the sandbox, so the operator binary
// links none of it.
package cliutil
