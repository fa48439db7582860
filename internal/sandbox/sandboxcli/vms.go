package sandboxcli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/virt-operator/virt-operator/internal/cliutil"
	"github.com/virt-operator/virt-operator/internal/sandbox/vmsim"
)

// NewVMsCommand returns `virt-sandbox vms` with its `create` subcommand.
func NewVMsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "vms",
		Short: "Manage simulated virtual machines in a sandbox",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newVMsCreateCommand())
	return cmd
}

func newVMsCreateCommand() *cobra.Command {
	var (
		dir string
		o   vmsim.CreateOptions
	)
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create VMs (runStrategy Always) and their VMIs; the sandbox's simulator runs them",
		Long: `Create --count VMs named PREFIX-0000, PREFIX-0001, ... with their VMIs in the sandbox of
--dir. The last --non-migratable of them are labelled ` + vmsim.NonMigratableLabel + `=true and
report LiveMigratable=False. The sandbox's VM simulator gives every VMI a launcher pod
with the current virt-launcher image and makes it Running.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case o.Count < 1:
				return cliutil.UsageError(fmt.Errorf("--count must be at least 1, got %d", o.Count))
			case o.NonMigratable < 0:
				return cliutil.UsageError(fmt.Errorf("--non-migratable must not be negative, got %d", o.NonMigratable))
			case o.NonMigratable > o.Count:
				return cliutil.UsageError(fmt.Errorf("--non-migratable (%d) must not exceed --count (%d)", o.NonMigratable, o.Count))
			}
			kubeconfig := filepath.Join(dir, "kubeconfig")
			if _, err := os.Stat(kubeconfig); err != nil {
				return cliutil.UsageError(fmt.Errorf("--dir %s: no sandbox there (%w); start one with virt-sandbox up", dir, errors.Unwrap(err)))
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return cliutil.UsageError(fmt.Errorf("--dir %s: %w", dir, err))
			}
			c, err := vmsim.NewClient(cfg)
			if err != nil {
				return err
			}
			start := time.Now()
			names, err := vmsim.CreateVMs(cmd.Context(), c, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created %d VMs and VMIs (%s to %s, %d non-migratable) in namespace %s in %s\n",
				len(names), names[0], names[len(names)-1], o.NonMigratable, o.Namespace, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", DefaultDir, "working directory of the sandbox")
	f.IntVar(&o.Count, "count", 0, "number of VMs to create")
	f.IntVar(&o.NonMigratable, "non-migratable", 0, "how many of them (the last ones) are not live-migratable")
	f.StringVar(&o.Namespace, "namespace", vmsim.DefaultNamespace, "namespace of the VMs")
	f.StringVar(&o.NamePrefix, "name-prefix", vmsim.DefaultNamePrefix, "VM names are PREFIX-NNNN")
	f.IntVar(&o.Workers, "workers", vmsim.DefaultWorkers, "concurrent creates")
	return cmd
}
