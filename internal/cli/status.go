package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/operator"
	"github.com/virt-operator/virt-operator/internal/statusview"
)

// The status command prints one screen an admin reads during an upgrade
// (internal/statusview). Exit status: 0; 1 when the CR is Degraded (Stalled) or
// cannot be read; 2 on bad flags. With --watch it redraws every --interval
// until the upgrade and its workload updates are done (exit 0) or it is
// interrupted; in a terminal the screen is redrawn in place, otherwise each
// changed screen is printed in turn, as plain text.

type statusOptions struct {
	kubeconfig, namespace, name string
	watch                       bool
	interval                    time.Duration
}

// NewStatusCommand returns `status`.
func NewStatusCommand() *cobra.Command {
	var o statusOptions
	cmd := &cobra.Command{
		Use:           "status [--watch] [--kubeconfig F] [--namespace NS] [--name kubevirt]",
		Short:         "Show an install or upgrade: versions, components, the virt-handler canary, workload updates, history",
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.interval <= 0 {
				return UsageError(fmt.Errorf("--interval %s: want a positive duration", o.interval))
			}
			c, _, err := newClient(o.kubeconfig)
			if err != nil {
				return err
			}
			if o.namespace == "" {
				o.namespace = DefaultNamespace()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			out := cmd.OutOrStdout()
			return runStatus(ctx, c, out, o, isTerminal(out))
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError(err) })
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file; default $KUBECONFIG, then in-cluster config")
	f.StringVar(&o.namespace, "namespace", "", "the KubeVirt CR's namespace; default $POD_NAMESPACE, then kubevirt")
	f.StringVar(&o.name, "name", "kubevirt", "the KubeVirt CR's name")
	f.BoolVarP(&o.watch, "watch", "w", false, "redraw until the upgrade and its workload updates are done")
	f.DurationVar(&o.interval, "interval", time.Second, "how often --watch redraws")
	return cmd
}

// newClient is a client with the operator's scheme for the kubeconfig (an
// unreadable one is bad input), and its config.
func newClient(kubeconfig string) (client.Client, *rest.Config, error) {
	cfg, err := RESTConfig(kubeconfig)
	if err != nil {
		return nil, nil, UsageError(err)
	}
	// kubectl's client-side limits: plan reads every object of a strategy, which
	// client-go's default of 5 a second turned into 10 s of waiting.
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 300
	}
	scheme, err := operator.NewScheme()
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	return c, cfg, err
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// errDegraded is the exit status 1 of a Degraded CR.
var errDegraded = errors.New("the KubeVirt CR is Degraded")

func runStatus(ctx context.Context, c client.Client, out io.Writer, o statusOptions, tty bool) error {
	last := ""
	for {
		snap, err := snapshot(ctx, c, o.namespace, o.name)
		if err != nil {
			return err
		}
		screen := statusview.Render(snap)
		switch {
		case tty && o.watch:
			fmt.Fprint(out, "\033[H\033[2J"+screen) // home, clear, draw
		case screen != last:
			if last != "" {
				fmt.Fprintln(out)
			}
			fmt.Fprint(out, screen)
		}
		last = screen
		switch {
		case statusview.Degraded(snap.KubeVirt) && !o.watch:
			return &ExitError{Code: ExitFailure, Err: errDegraded}
		case !o.watch, statusview.Done(snap.KubeVirt):
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.interval):
		}
	}
}

// snapshot reads the CR and the components in its namespace.
func snapshot(ctx context.Context, c client.Client, namespace, name string) (statusview.Snapshot, error) {
	kv := &v1.KubeVirt{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, kv); err != nil {
		if apierrors.IsNotFound(err) {
			return statusview.Snapshot{}, fmt.Errorf("no KubeVirt %s/%s (--namespace, --name)", namespace, name)
		}
		return statusview.Snapshot{}, fmt.Errorf("reading KubeVirt %s/%s: %w", namespace, name, err)
	}
	managed := client.MatchingLabels{metadata.ManagedByLabel: metadata.ManagedByValue}
	var deps appsv1.DeploymentList
	if err := c.List(ctx, &deps, client.InNamespace(namespace), managed); err != nil {
		return statusview.Snapshot{}, fmt.Errorf("listing Deployments in %s: %w", namespace, err)
	}
	var dss appsv1.DaemonSetList
	if err := c.List(ctx, &dss, client.InNamespace(namespace), managed); err != nil {
		return statusview.Snapshot{}, fmt.Errorf("listing DaemonSets in %s: %w", namespace, err)
	}
	return statusview.Snapshot{KubeVirt: kv, Deployments: deps.Items, DaemonSets: dss.Items, Now: time.Now()}, nil
}
