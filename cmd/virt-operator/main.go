// Command virt-operator installs, upgrades and uninstalls the KubeVirt control
// plane. Its subcommands are the operator itself (run), the tools for a cluster
// (plan, status), the offline tools (deployment-id, render, versions) and the
// install-strategy Job's dump mode. The development sandbox is a binary of its
// own, virt-sandbox, so this one links none of it.
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
