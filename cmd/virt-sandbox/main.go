// Command virt-sandbox is the operator's development sandbox: a local control
// plane with kwok nodes (up, down), the operator run against one with a sample CR
// and a demo upgrade (run, what `make run` calls), simulated VMs (vms create), and
// the sandbox's background processes (hostexec, the runner of host-executed pods;
// vmsim, the VM simulator), which the sandbox starts from this binary. Pods of the
// operator's image run the virt-operator binary beside it. It is a binary of its
// own so the operator's links none of this.
package main

import (
	"fmt"
	"os"

	"github.com/virt-operator/virt-operator/internal/cliutil"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxcli"
)

func main() {
	if err := sandboxcli.NewRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "virt-sandbox:", err)
		os.Exit(cliutil.ExitCode(err))
	}
}
