// Command virt-operator installs, upgrades and uninstalls the KubeVirt control
// plane. Its subcommands are the operator itself (run), the offline tools
// (deployment-id, render, versions), the install-strategy Job's dump mode and the
// development sandbox (sandbox).
package main

import (
	"fmt"
	"os"

	"github.com/virt-operator/virt-operator/internal/cli"
)

func main() {
	if err := cli.NewRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "virt-operator:", err)
		os.Exit(cli.ExitCode(err))
	}
}
