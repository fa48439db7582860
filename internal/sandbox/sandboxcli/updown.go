package sandboxcli

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/virt-operator/virt-operator/internal/cliutil"
	"github.com/virt-operator/virt-operator/internal/sandbox"
	"github.com/virt-operator/virt-operator/internal/sandbox/vmsim"
)

// DefaultDir is the --dir default of the commands.
const DefaultDir = "_sandbox"

func newUpCommand() *cobra.Command {
	var o sandbox.Options
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a sandbox and leave it running; prints the KUBECONFIG export line",
		Long: `Start etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok as
background processes, create kwok nodes and install the CRDs. Progress goes to stderr;
the last line, on stdout, is "export KUBECONFIG=DIR/kubeconfig". Stop with "virt-sandbox down".
The hostexec runner and the VM simulator run from this binary; the install-strategy
Job's pods run the virt-operator binary beside it.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.MigrationDuration <= 0 {
				return cliutil.UsageError(fmt.Errorf("--migration-duration must be positive, got %s", o.MigrationDuration))
			}
			if !cmd.Flags().Changed("crd-dir") {
				o.CRDDir = DefaultCRDDir()
			}
			o.Log = cmd.ErrOrStderr()
			// Ctrl-C while starting: Up stops what it started and removes DIR.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			s, err := sandbox.Up(ctx, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "export KUBECONFIG=%s\n", s.Kubeconfig())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "dir", DefaultDir, "working directory of the sandbox (kubeconfig, logs, state)")
	f.IntVar(&o.Nodes, "nodes", 3, "number of kwok nodes to create")
	f.StringVar(&o.AuditLog, "audit-log", "", "file for kube-apiserver's audit log (Metadata level); empty: no audit log")
	f.StringVar(&o.CRDDir, "crd-dir", "", "directory whose *.yaml CRDs are installed (default <repo>/config/crd/bases if it exists; \"\" for none)")
	f.StringVar(&o.BinDir, "bin-dir", "", "directory of the cluster binaries (default $CLUSTER_BINS, else <repo>/.cache/cluster-bins)")
	f.DurationVar(&o.MigrationDuration, "migration-duration", vmsim.DefaultMigrationDuration, "how long the VM simulator takes per live migration")
	return cmd
}

func newDownCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:          "down",
		Short:        "Stop every process of a sandbox and remove its directory",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return sandbox.Down(dir)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", DefaultDir, "working directory of the sandbox")
	return cmd
}

// DefaultCRDDir is <repo>/config/crd/bases when it exists, else "".
func DefaultCRDDir() string {
	root, err := sandbox.RepoRoot()
	if err != nil {
		return ""
	}
	dir := filepath.Join(root, "config", "crd", "bases")
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return ""
	}
	return dir
}
