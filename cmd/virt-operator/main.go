// Command virt-operator installs, upgrades and uninstalls the KubeVirt control
// plane. Its subcommands are the operator itself (run), the offline tools
// (deployment-id) and the development sandbox (sandbox).
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/virt-operator/virt-operator/internal/cli"
	"github.com/virt-operator/virt-operator/internal/version"
)

func main() {
	root := &cobra.Command{
		Use:           "virt-operator",
		Short:         "Installs, upgrades and uninstalls the KubeVirt control plane",
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		cli.NewRunCommand(),
		cli.NewDeploymentIDCommand(),
		cli.NewRenderCommand(),
		cli.NewDumpInstallStrategyCommand(),
		sandboxCommand(),
	)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "virt-operator:", err)
		os.Exit(cli.ExitCode(err))
	}
}

// sandboxCommand is the development sandbox, with `run` for `make run`.
func sandboxCommand() *cobra.Command {
	cmd := cli.NewSandboxCommand()
	cmd.AddCommand(cli.NewSandboxRunCommand())
	cmd.AddCommand(cli.NewSandboxHostExecCommand())
	cmd.AddCommand(cli.NewSandboxVMSimCommand())
	cmd.AddCommand(cli.NewSandboxVMsCommand())
	return cmd
}
