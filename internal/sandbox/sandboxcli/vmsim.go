package sandboxcli

import (
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/virt-operator/virt-operator/internal/cliutil"
	"github.com/virt-operator/virt-operator/internal/sandbox/vmsim"
)

// NewVMSimCommand returns the hidden `virt-sandbox vmsim`: the sandbox's VM
// simulator (package vmsim), started in the background by `virt-sandbox up` and stopped
// by `virt-sandbox down`.
func NewVMSimCommand() *cobra.Command {
	var (
		o                 vmsim.Options
		kubeconfig, ready string
		verbose           bool
	)
	cmd := &cobra.Command{
		Use:           "vmsim",
		Short:         "Simulate virt-controller and virt-handler for VMs, VMIs and migrations (started by virt-sandbox up)",
		Hidden:        true,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kubeconfig == "" {
				return cliutil.UsageError(errors.New("--kubeconfig is required"))
			}
			if o.MigrationDuration <= 0 {
				return cliutil.UsageError(errors.New("--migration-duration must be positive"))
			}
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			o.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			readyErr := make(chan error, 1)
			o.Ready = func() {
				if ready != "" {
					readyErr <- os.WriteFile(ready, []byte(time.Now().Format(time.RFC3339)+"\n"), 0o644)
				}
			}
			go func() {
				if err := <-readyErr; err != nil {
					o.Log.Error("writing the ready file", "error", err)
					stop()
				}
			}()
			return cliutil.IgnoreCanceled(vmsim.Run(ctx, cfg, o))
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "the sandbox's kubeconfig")
	f.DurationVar(&o.MigrationDuration, "migration-duration", vmsim.DefaultMigrationDuration, "how long each live migration takes")
	f.StringVar(&o.LauncherImage, "launcher-image", vmsim.DefaultLauncherImage, "launcher image while no virt-controller Deployment names one")
	f.BoolVar(&o.SkipTransitionalPhases, "skip-transitional-phases", false, "write no Starting or Stopping VM status (fewer API writes at scale)")
	f.BoolVar(&o.Podless, "podless", false, "run VMIs without launcher pods (no evictions; for thousands of VMs)")
	f.DurationVar(&o.UpdaterWindow, "updater-window", 0, "gather virt-controller's workload-updater events into one plan per window (0: one per event)")
	f.IntVar(&o.Workers, "workers", vmsim.DefaultReconcilers, "concurrent reconciles per controller")
	f.StringVar(&ready, "ready-file", "", "file written once the simulator's caches are synced")
	f.BoolVar(&verbose, "verbose", false, "log every launcher pod created")
	return cmd
}
