package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/preflight"
	"github.com/virt-operator/virt-operator/internal/release"
	"github.com/virt-operator/virt-operator/internal/storedversions"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
	"github.com/virt-operator/virt-operator/internal/upgradeplan"
	"github.com/virt-operator/virt-operator/internal/workloads"
)

// The plan command says what applying a KubeVirt CR would do, against the live
// cluster, before anything changes (internal/upgradeplan). It only reads.
// Exit status: 0 when it could plan; 1 when a preflight check blocks; 2 on bad
// input (flags, the file, a spec the operator would reject, a release this
// build cannot render).

type planOptions struct {
	file, kubeconfig string
	// current is the live CR as a file (with its status): plan offline.
	current string
	env     []string
}

// NewPlanCommand returns `plan`.
func NewPlanCommand() *cobra.Command {
	var o planOptions
	cmd := &cobra.Command{
		Use:   "plan -f NEW-KUBEVIRT.yaml [--kubeconfig F] [--env NAME=VALUE]...",
		Short: "Show what applying a KubeVirt CR would change, restart, move and take, before it happens",
		Long: `Plan reads the cluster (the live KubeVirt CR of the file's name and namespace, the
operator's Deployment for its environment, the objects, pods, nodes and VMIs) and prints: the
config keys that change and the new deployment ID; the objects created, updated (with the fields
that change) and deleted; new images; the pods that restart, in order, and the node the
virt-handler canary would start on; the VMIs that would migrate, be evicted or be left; an
estimate of the time from the rollout settings, the pod starts the cluster measured and earlier
upgrades (status.history); and the preflight checks. Nothing is written.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPlan(cmd.Context(), cmd.OutOrStdout(), o, deployid.OSEnv{})
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError(err) })
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "the KubeVirt CR to plan, as YAML or JSON")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file; default $KUBECONFIG, then in-cluster config")
	f.StringVar(&o.current, "current", "", "plan offline against this file of the current KubeVirt CR, status included (kubectl get kubevirt -o yaml): the two releases' objects are compared, no cluster is read")
	f.StringArrayVar(&o.env, "env", nil, "NAME=VALUE to set in the operator's environment (repeatable; default: the virt-operator Deployment's)")
	return cmd
}

var errPreflight = errors.New("a preflight check blocks the upgrade")

func runPlan(ctx context.Context, out io.Writer, o planOptions, processEnv deployid.Env) error {
	if o.file == "" {
		return UsageError(errors.New("-f KUBEVIRT.yaml is required"))
	}
	newKV, err := loadKubeVirt(o.file)
	if err != nil {
		return UsageError(err)
	}
	if newKV.Namespace == "" {
		newKV.Namespace = DefaultNamespace()
	}
	if o.current != "" {
		in, err := offlineInput(newKV, processEnv, o)
		if err != nil {
			return err
		}
		return printPlan(out, upgradeplan.Make(in))
	}
	c, cfg, err := newClient(o.kubeconfig)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	in, err := planInput(ctx, c, dc.ServerVersion, newKV, processEnv, o)
	if err != nil {
		return err
	}
	return printPlan(out, upgradeplan.Make(in))
}

func printPlan(out io.Writer, p upgradeplan.Plan) error {
	if _, err := io.WriteString(out, p.Text()); err != nil {
		return err
	}
	if p.Blocked() {
		return &ExitError{Code: ExitFailure, Err: errPreflight}
	}
	return nil
}

// offlineInput plans against a file of the current CR: the current target's
// objects (rendered from its status.targetDeploymentConfig) stand in for the
// live ones; no pods, nodes or VMIs are known, and no preflight runs.
func offlineInput(newKV *v1.KubeVirt, processEnv deployid.Env, o planOptions) (upgradeplan.Input, error) {
	in := upgradeplan.Input{NewKubeVirt: newKV}
	current, err := loadKubeVirt(o.current)
	if err != nil {
		return in, UsageError(err)
	}
	if current.Status.TargetDeploymentConfig == "" {
		return in, UsageError(fmt.Errorf("%s has no status.targetDeploymentConfig: give the CR as the cluster has it (kubectl get kubevirt -o yaml)", o.current))
	}
	in.Current = current
	if in.CurrentConfig, err = deployid.Parse(current.Status.TargetDeploymentConfig); err != nil {
		return in, UsageError(fmt.Errorf("%s: status.targetDeploymentConfig: %w", o.current, err))
	}
	env, err := operatorEnv(processEnv, o.env)
	if err != nil {
		return in, UsageError(err)
	}
	env["POD_NAMESPACE"] = newKV.Namespace
	if in.NewConfig, err = deployid.FromKubeVirt(newKV, env); err != nil {
		return in, UsageError(fmt.Errorf("%s: %w", o.file, err))
	}
	render := func(cfg *deployid.Config) (*strategy.Strategy, error) {
		s, err := generate.Generate(generate.Input{Config: cfg})
		if err != nil {
			return nil, UsageError(fmt.Errorf("plan renders the releases this build knows (virt-operator versions): %w", err))
		}
		prepared, err := apply.Prepare(s, cfg)
		if err != nil {
			return nil, UsageError(err)
		}
		return apply.Desired(prepared, cfg), nil
	}
	desired, err := render(in.NewConfig)
	if err != nil {
		return in, err
	}
	was, err := render(in.CurrentConfig)
	if err != nil {
		return in, err
	}
	in.Steps = apply.Steps(desired, apply.ChoosePath(in.NewConfig.KubeVirtVersion, current.Status.ObservedKubeVirtVersion))
	in.Live = map[apply.ObjectRef]client.Object{}
	var previous []client.Object
	for _, step := range apply.Steps(was, apply.Install) {
		for _, obj := range step.Objects {
			in.Live[apply.RefOf(obj)] = obj
			previous = append(previous, obj)
		}
	}
	in.Orphans = apply.Orphans(apply.Refs(apply.Steps(desired, apply.Install)), previous)
	in.Preflight = []v1.PreflightCheck{{Name: "(offline)", State: preflight.Passed, Message: "no cluster read: no preflight"}}
	return in, nil
}

// planInput reads what a plan looks at.
func planInput(ctx context.Context, c client.Client, serverVersion func() (*version.Info, error), newKV *v1.KubeVirt,
	processEnv deployid.Env, o planOptions) (upgradeplan.Input, error) {
	in := upgradeplan.Input{NewKubeVirt: newKV}
	ns := newKV.Namespace
	current := &v1.KubeVirt{}
	switch err := c.Get(ctx, client.ObjectKeyFromObject(newKV), current); {
	case apierrors.IsNotFound(err):
		current = nil
	case err != nil:
		return in, fmt.Errorf("reading KubeVirt %s/%s: %w", ns, newKV.Name, err)
	}
	in.Current = current
	env, err := liveOperatorEnv(ctx, c, ns, processEnv, o.env)
	if err != nil {
		return in, err
	}
	if in.NewConfig, err = deployid.FromKubeVirt(newKV, env); err != nil {
		return in, UsageError(fmt.Errorf("%s: %w", o.file, err))
	}
	if current != nil && current.Status.TargetDeploymentConfig != "" {
		if in.CurrentConfig, err = deployid.Parse(current.Status.TargetDeploymentConfig); err != nil {
			return in, fmt.Errorf("the live CR's target config: %w", err)
		}
	}
	monitoring, err := strategy.DetectMonitorNamespace(ctx, c, in.NewConfig.PotentialMonitorNamespaces(), in.NewConfig.MonitorAccount())
	if err != nil {
		return in, fmt.Errorf("detecting the monitoring namespace: %w", err)
	}
	s, err := generate.Generate(generate.Input{Config: in.NewConfig, MonitorNamespace: monitoring})
	if err != nil {
		return in, UsageError(fmt.Errorf("plan renders the releases this build knows (virt-operator versions): %w", err))
	}
	if _, err := certs.PolicyFrom(newKV.Spec.CertificateRotateStrategy); err != nil {
		return in, UsageError(fmt.Errorf("%s: %w", o.file, err))
	}
	desired, err := apply.DesiredState(ctx, c, c.RESTMapper(), s, in.NewConfig)
	if err != nil {
		return in, fmt.Errorf("preparing the strategy: %w", err)
	}
	observed := ""
	if current != nil {
		observed = current.Status.ObservedKubeVirtVersion
	}
	in.Steps = withoutCertificates(apply.Steps(desired, apply.ChoosePath(in.NewConfig.KubeVirtVersion, observed)))
	if in.Live, err = apply.LiveObjects(ctx, c, desired); err != nil {
		return in, err
	}
	managed, err := apply.ListManaged(ctx, c, apply.Scope{Namespace: ns}, apply.KindsOf(desired.Others)...)
	if err != nil {
		return in, err
	}
	in.Orphans = apply.Orphans(apply.Refs(apply.Steps(desired, apply.Install)), managed)
	removed, counts, err := workloads.InRemovedCRDs(ctx, c, c, desired.CRDs)
	if err != nil {
		return in, err
	}
	in.Removed = apply.DataOfEach(removed, counts.For, apply.DeleteRetainedNames(deleteRetained(newKV, current)))
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return in, err
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return in, err
	}
	var vmis v1.VirtualMachineInstanceList
	if err := c.List(ctx, &vmis); err != nil && !meta.IsNoMatchError(err) { // no KubeVirt CRDs yet
		return in, err
	}
	in.Pods, in.Nodes, in.VMIs = pods.Items, nodes.Items, vmis.Items
	if in.Preflight, in.StoredVersions, err = planPreflight(ctx, c, serverVersion, in.NewConfig, desired, in.Removed); err != nil {
		return in, err
	}
	in.Preflight = append([]v1.PreflightCheck{preflight.UpgradePath(observed, in.NewConfig.KubeVirtVersion)}, in.Preflight...)
	return in, nil
}

// liveOperatorEnv is the environment of the virt-operator Deployment's
// container (what the running operator computes its config with), else the
// process's, with the --env overrides.
func liveOperatorEnv(ctx context.Context, c client.Client, ns string, processEnv deployid.Env, overrides []string) (deployid.MapEnv, error) {
	env, err := operatorEnv(processEnv, overrides)
	if err != nil {
		return nil, UsageError(err)
	}
	dep := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "virt-operator"}, dep); err != nil {
		return env, client.IgnoreNotFound(err)
	}
	live := deployid.MapEnv{}
	for _, ct := range dep.Spec.Template.Spec.Containers {
		for _, e := range ct.Env {
			if e.ValueFrom == nil {
				live[e.Name] = e.Value
			}
		}
	}
	live["POD_NAMESPACE"] = ns
	for _, o := range overrides { // explicit overrides win
		if name, value, ok := strings.Cut(o, "="); ok {
			live[name] = value
		}
	}
	return live, nil
}

// deleteRetained are the annotations the delete-retained annotation is read
// from: the planned CR's when it has it, else the live CR's (applying a file
// without it leaves the live one).
func deleteRetained(planned, current *v1.KubeVirt) map[string]string {
	if _, set := planned.Annotations[metadata.DeleteRetainedAnnotation]; set || current == nil {
		return planned.Annotations
	}
	return current.Annotations
}

// planPreflight are the checks a plan can make without writing (the image
// pre-pull needs pods, so only the operator runs it), and what becomes of the
// stored versions the target no longer serves.
func planPreflight(ctx context.Context, c client.Client, serverVersion func() (*version.Info, error), cfg *deployid.Config,
	desired *strategy.Strategy, removed map[string]apply.CRDData) ([]v1.PreflightCheck, []storedversions.Decision, error) {
	decisions, err := storedversions.Read(ctx, c, desired.CRDs)
	if err != nil {
		return nil, nil, err
	}
	checks := []v1.PreflightCheck{preflight.StoredVersions(decisions), preflight.RemovedCRDs(removed)}
	if rel, known := release.Lookup(cfg.KubeVirtVersion); known {
		info, err := serverVersion()
		if err != nil {
			return nil, nil, fmt.Errorf("reading the Kubernetes version: %w", err)
		}
		checks = append(checks, preflight.KubernetesOf(rel, info))
	}
	return checks, decisions, nil
}

// withoutCertificates are steps without the certificate Secrets and CA
// bundles: the certificate controller keeps them valid on its own schedule,
// whatever a rollout does, so an upgrade neither writes nor waits on them.
func withoutCertificates(steps []apply.Step) []apply.Step {
	for i := range steps {
		var kept []client.Object
		for _, o := range steps[i].Objects {
			if !certs.IsCertificateObject(apply.RefOf(o).Kind, o.GetName(), o.GetNamespace()) {
				kept = append(kept, o)
			}
		}
		steps[i].Objects = kept
	}
	return steps
}
