package cli

import (
	"github.com/spf13/cobra"

	"github.com/virt-operator/virt-operator/internal/version"
)

// NewRootCommand is the virt-operator command with every subcommand, and
// upstream's Job mode as the root flag --dump-install-strategy.
func NewRootCommand() *cobra.Command {
	var (
		dumpMode bool
		o        dumpOptions
	)
	root := &cobra.Command{
		Use:           "virt-operator",
		Short:         "Installs, upgrades and uninstalls the KubeVirt control plane",
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !dumpMode {
				return cmd.Help()
			}
			return o.run(cmd.Context())
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError(err) })
	root.Flags().BoolVar(&dumpMode, dumpFlag, false, "upstream's Job mode: the same as the dump-install-strategy command")
	o.addFlags(root)
	root.AddCommand(
		NewRunCommand(),
		NewDeploymentIDCommand(),
		NewRenderCommand(),
		NewVersionsCommand(),
		NewDumpInstallStrategyCommand(),
		NewStatusCommand(),
		NewPlanCommand(),
		NewHandbackCommand(),
	)
	return root
}
