package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/cliutil"
	"github.com/virt-operator/virt-operator/internal/deployid"
)

// The deployment-id command prints the deployment ID the operator would compute
// for a KubeVirt CR, so users can see offline whether an edit will roll out.
//
// Exit status: 0 on success; 2 (ExitUsage) on bad input — bad flags, a missing or
// unreadable file, invalid YAML, an object that is not a kubevirt.io/v1 KubeVirt, or
// a spec the operator would reject — with one line on stderr naming the problem
// (main prints the returned error and exits with ExitCode). Unknown fields in the
// file are ignored, as the API server would prune them.

// NewDeploymentIDCommand returns `deployment-id`, reading the process environment
// as the operator does.
func NewDeploymentIDCommand() *cobra.Command {
	return newDeploymentIDCommand(deployid.OSEnv{})
}

type deploymentIDOptions struct {
	file, output string
	env          []string
}

func newDeploymentIDCommand(processEnv deployid.Env) *cobra.Command {
	var o deploymentIDOptions
	cmd := &cobra.Command{
		Use:   "deployment-id -f KUBEVIRT.yaml [--env NAME=VALUE]... [-o id|json]",
		Short: "Print the deployment ID the operator would compute for a KubeVirt CR",
		Long: `Print the deployment ID (default) or, with -o json, the canonical JSON config whose
SHA-1 it is. The environment is read as the operator reads it (VIRT_OPERATOR_IMAGE,
KUBEVIRT_VERSION, VIRT_*_IMAGE, KV_IO_EXTRA_ENV_*, ...); --env NAME=VALUE overrides it.
A KubeVirt without metadata.namespace is taken to live in $POD_NAMESPACE, else kubevirt.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return UsageError(fmt.Errorf("deployment-id takes no arguments, got %q", args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDeploymentID(cmd.OutOrStdout(), o, processEnv)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError(err) })
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "the KubeVirt CR, as YAML or JSON")
	f.StringArrayVar(&o.env, "env", nil, "NAME=VALUE to set in the operator's environment (repeatable)")
	f.StringVarP(&o.output, "output", "o", "id", "what to print: id, or json (the canonical config that is hashed)")
	return cmd
}

func runDeploymentID(out io.Writer, o deploymentIDOptions, processEnv deployid.Env) error {
	if o.output != "id" && o.output != "json" {
		return UsageError(fmt.Errorf("-o %q: want id or json", o.output))
	}
	cfg, err := configFromFile(o.file, processEnv, o.env)
	if err != nil {
		return err
	}
	if o.output == "json" {
		_, err = fmt.Fprintf(out, "%s\n", cfg.CanonicalJSON())
	} else {
		_, err = fmt.Fprintln(out, cfg.ID)
	}
	return err
}

// operatorEnv is the process environment with the --env overrides applied.
func operatorEnv(processEnv deployid.Env, overrides []string) (deployid.MapEnv, error) {
	env := deployid.EnvFromList(processEnv.Environ())
	for _, o := range overrides {
		name, value, ok := strings.Cut(o, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--env %q: want NAME=VALUE", o)
		}
		env[name] = value
	}
	return env, nil
}

// loadKubeVirt reads one KubeVirt from a YAML or JSON file.
func loadKubeVirt(path string) (*v1.KubeVirt, error) { return cliutil.LoadKubeVirt(path) }
