package sandboxcli

import (
	"github.com/spf13/cobra"

	"github.com/virt-operator/virt-operator/internal/cliutil"
	"github.com/virt-operator/virt-operator/internal/version"
)

// NewRootCommand is the virt-sandbox command with every subcommand.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "virt-sandbox",
		Short:         "A local control plane with kwok nodes for developing and testing the operator",
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cliutil.UsageError(err) })
	root.AddCommand(
		newUpCommand(),
		newDownCommand(),
		NewRunCommand(),
		NewVMsCommand(),
		NewHostExecCommand(),
		NewVMSimCommand(),
	)
	return root
}
