package cli

import (
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

// NewDumpInstallStrategyCommand returns `dump-install-strategy`: what the
// install-strategy Job runs. It reads TARGET_DEPLOYMENT_CONFIG (and POD_NAMESPACE
// when the config has no namespace), generates the strategy and stores it in a
// ConfigMap, unless the one in force for the ID already has the same monitoring
// answer.
//
// Exit status: 0 on success (including "already there"); 2 when the environment
// holds no valid config; 1 on any other failure.
func NewDumpInstallStrategyCommand() *cobra.Command {
	var kubeconfig, logFormat string
	cmd := &cobra.Command{
		Use:   "dump-install-strategy [--kubeconfig FILE]",
		Short: "Generate the install strategy for $" + dump.ConfigEnv + " and store it in a ConfigMap",
		Long: `Generate the install strategy for the deployment config in $` + dump.ConfigEnv + ` (JSON with
its id, as the operator passes it to the install-strategy Job) and create the
kubevirt-install-strategy-* ConfigMap in the config's namespace, else $` + dump.NamespaceEnv + `.
The monitoring namespace and OpenShift are detected on the cluster. Running it again
for the same id and the same monitoring answer changes nothing.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return UsageError(fmt.Errorf("dump-install-strategy takes no arguments, got %q", args))
			}
			return nil
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := SetupLogging(logFormat); err != nil {
				return UsageError(err)
			}
			// Fail on a bad environment before contacting the cluster.
			env := deployid.OSEnv{}
			if _, err := dump.ConfigFromEnv(env); err != nil {
				return UsageError(err)
			}
			cfg, err := RESTConfig(kubeconfig)
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
			apis, err := dump.NewServerDiscovery(cfg)
			if err != nil {
				return err
			}
			err = dump.Run(cmd.Context(), c, apis, env, ctrl.Log.WithName("dump-install-strategy"))
			if errors.Is(err, dump.ErrNoConfig) || errors.Is(err, dump.ErrInvalidConfig) {
				return UsageError(err)
			}
			return err
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError(err) })
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file; default $KUBECONFIG, then in-cluster config")
	f.StringVar(&logFormat, "log-format", "json", "log format: json or text")
	return cmd
}
