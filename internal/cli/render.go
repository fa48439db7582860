package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/release"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
)

// The render command prints, offline, the install strategy the operator would
// generate for a KubeVirt CR: its inventory (-o names) or every object as YAML
// (-o yaml) that `kubectl apply` accepts once the namespace exists.
//
// Exit status as deployment-id: 0 on success; 2 (ExitUsage) on bad input, with one
// line naming the problem.

// NewRenderCommand returns `render`, reading the process environment as the
// operator does.
func NewRenderCommand() *cobra.Command {
	return newRenderCommand(deployid.OSEnv{})
}

type renderOptions struct {
	file, output, monitoringNamespace, kubevirtVersion string
	env                                                []string
}

func newRenderCommand(processEnv deployid.Env) *cobra.Command {
	var o renderOptions
	cmd := &cobra.Command{
		Use:   "render -f KUBEVIRT.yaml [--kubevirt-version V] [--env NAME=VALUE]... [--monitoring-namespace NS] [-o yaml|names]",
		Short: "Print the install strategy the operator would generate for a KubeVirt CR",
		Long: `Print the install strategy for a KubeVirt CR: with -o yaml (default) every object as
multi-document YAML, CRDs first, ready for kubectl apply once the KubeVirt namespace
exists; with -o names one sorted line per object, "Kind namespace/name" or "Kind name".
The deployment config is built as deployment-id builds it (same environment, same
--env overrides); the KubeVirt release is the CR's spec.imageTag, else --kubevirt-version,
else what the environment names, else the newest supported one ("virt-operator versions").
--monitoring-namespace says where Prometheus was found (adds the ServiceMonitor,
PrometheusRule and their RBAC). As upstream's, the strategy always holds the OpenShift
SCCs and Route; the operator writes them only where their APIs are served. Placement
(spec.infra, spec.workloads) and customizeComponents are applied by the operator on top
of this strategy and are not shown. A release the builtin generator does not know is
an error: the operator has that release's own operator image generate it.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return UsageError(fmt.Errorf("render takes no arguments, got %q", args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRender(cmd.OutOrStdout(), o, processEnv)
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError(err) })
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "the KubeVirt CR, as YAML or JSON")
	f.StringArrayVar(&o.env, "env", nil, "NAME=VALUE to set in the operator's environment (repeatable)")
	f.StringVar(&o.monitoringNamespace, "monitoring-namespace", "", "namespace where Prometheus' ServiceAccount is (empty: no monitoring objects)")
	f.StringVar(&o.kubevirtVersion, "kubevirt-version", "", "the KubeVirt release to render when the CR has no spec.imageTag (e.g. v1.8.4)")
	f.StringVarP(&o.output, "output", "o", "yaml", "what to print: yaml, or names")
	return cmd
}

func runRender(out io.Writer, o renderOptions, processEnv deployid.Env) error {
	if o.output != "yaml" && o.output != "names" {
		return UsageError(fmt.Errorf("-o %q: want yaml or names", o.output))
	}
	if o.kubevirtVersion != "" && !release.IsVersion(o.kubevirtVersion) {
		return UsageError(fmt.Errorf("--kubevirt-version %q is not a KubeVirt release version (e.g. v1.9.0)", o.kubevirtVersion))
	}
	cfg, err := configFromFile(o.file, processEnv, o.env, func(kv *v1.KubeVirt) {
		if kv.Spec.ImageTag == "" {
			kv.Spec.ImageTag = o.kubevirtVersion
		}
	})
	if err != nil {
		return err
	}
	s, err := generate.Generate(generate.Input{Config: cfg, MonitorNamespace: o.monitoringNamespace})
	if err != nil {
		return UsageError(fmt.Errorf("%s: %w", o.file, err))
	}
	if o.output == "names" {
		for _, ref := range s.Inventory() {
			if _, err := fmt.Fprintln(out, ref); err != nil {
				return err
			}
		}
		return nil
	}
	raw, err := generate.RenderYAML(s)
	if err != nil {
		return err
	}
	_, err = out.Write(raw)
	return err
}

// configFromFile builds the deployment config of the KubeVirt in file exactly as
// deployment-id does: the process environment with the --env overrides, and a
// KubeVirt without namespace taken to live in $POD_NAMESPACE, else kubevirt.
// Every failure is bad input.
func configFromFile(file string, processEnv deployid.Env, overrides []string, edits ...func(*v1.KubeVirt)) (*deployid.Config, error) {
	if file == "" {
		return nil, UsageError(errors.New("-f KUBEVIRT.yaml is required"))
	}
	env, err := operatorEnv(processEnv, overrides)
	if err != nil {
		return nil, UsageError(err)
	}
	kv, err := loadKubeVirt(file)
	if err != nil {
		return nil, UsageError(err)
	}
	for _, edit := range edits {
		edit(kv)
	}
	if kv.Namespace == "" {
		kv.Namespace = "kubevirt"
		if ns := env["POD_NAMESPACE"]; ns != "" {
			kv.Namespace = ns
		}
	}
	cfg, err := deployid.FromKubeVirt(kv, env)
	if err != nil {
		return nil, UsageError(fmt.Errorf("%s: %w", file, err))
	}
	return cfg, nil
}
