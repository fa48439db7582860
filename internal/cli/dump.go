package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/strategy/dump"
)

// dumpFlag is upstream's Job mode, a flag of the root command: the install-strategy
// Job runs `virt-operator --dump-install-strategy` whatever release's operator image
// it starts, ours or upstream's own.
const dumpFlag = "dump-install-strategy"

// NewDumpInstallStrategyCommand returns `dump-install-strategy`, the same Job mode
// as `virt-operator --dump-install-strategy`.
//
// Exit status: 0 on success (including "already there"); 2 when the environment
// holds no valid config; 1 on any other failure.
func NewDumpInstallStrategyCommand() *cobra.Command {
	var o dumpOptions
	cmd := &cobra.Command{
		Use:   "dump-install-strategy [--kubeconfig FILE]",
		Short: "Generate the install strategy for $" + dump.ConfigEnv + " and store it in a ConfigMap",
		Long: `Generate the install strategy for the deployment config in $` + dump.ConfigEnv + ` (upstream's
KubeVirtDeploymentConfig JSON with its id, as the operator passes it to the install-strategy
Job) and create the kubevirt-install-strategy-* ConfigMap in the config's namespace, else
$` + dump.NamespaceEnv + `. The monitoring namespace is detected on the cluster. Running it again
for the same id and the same monitoring answer changes nothing. The builtin generator knows
the KubeVirt release lines listed by "virt-operator versions".
"virt-operator --` + dumpFlag + `" does the same.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return UsageError(fmt.Errorf("dump-install-strategy takes no arguments, got %q", args))
			}
			return nil
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context()) },
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError(err) })
	o.addFlags(cmd)
	return cmd
}

type dumpOptions struct {
	kubeconfig, logFormat string
}

func (o *dumpOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file; default $KUBECONFIG, then in-cluster config")
	f.StringVar(&o.logFormat, "log-format", "json", "log format: json or text")
}

func (o *dumpOptions) run(ctx context.Context) error {
	if err := SetupLogging(o.logFormat); err != nil {
		return UsageError(err)
	}
	// Fail on a bad environment before contacting the cluster.
	env := deployid.OSEnv{}
	if _, err := dump.ConfigFromEnv(env); err != nil {
		return UsageError(err)
	}
	cfg, err := RESTConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	err = dump.Run(ctx, c, env, ctrl.Log.WithName("dump-install-strategy"))
	if errors.Is(err, dump.ErrNoConfig) || errors.Is(err, dump.ErrInvalidConfig) {
		return UsageError(err)
	}
	return err
}
