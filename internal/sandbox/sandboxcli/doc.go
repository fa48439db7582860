// Package sandboxcli holds the cobra commands of the virt-sandbox binary, the
// development sandbox: up and down (a local control plane with kwok nodes, package
// sandbox), run (what `make run` calls: a sandbox, the operator in the foreground,
// a sample CR and a demo upgrade), vms create (simulated VMs), and the hidden
// background processes the sandbox starts from this binary, hostexec (the runner
// of host-executed pods, package sandbox/hostexec) and vmsim (the VM simulator,
// package sandbox/vmsim).
//
// It lives apart from package cli so the operator binary links none of the
// sandbox; what both binaries' commands share is in package cliutil.
package sandboxcli
