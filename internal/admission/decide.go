package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/maintenance"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/release"
	"github.com/virt-operator/virt-operator/internal/rollout"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/generate"
	"github.com/virt-operator/virt-operator/internal/workloads"
	"github.com/virt-operator/virt-operator/internal/workloadupdate"
)

// Verdict is an admission decision: allowed, or refused with a message that names
// the problem.
type Verdict struct {
	Allowed bool
	Message string
}

func allow() Verdict                         { return Verdict{Allowed: true} }
func refuse(format string, a ...any) Verdict { return Verdict{Message: fmt.Sprintf(format, a...)} }

// AlreadyCreated is upstream's message for a second KubeVirt CR.
const AlreadyCreated = "Kubevirt is already created"

// Validator decides creates and updates: it checks a spec as the operator reads
// it, with the operator's own code, so that what the operator would refuse or
// hold on forever is refused when it is written, with the field named.
type Validator struct {
	// Env is the operator's environment: it says which release a CR without
	// spec.imageTag installs, and the images. Nil is the process environment,
	// as the operator's.
	Env deployid.Env

	// renders lets one dry run render a strategy at a time: a render allocates
	// about 28 MB.
	rendersOnce sync.Once
	renders     chan struct{}
	// render is the dry run's work; nil is render (tests replace it).
	render func(*deployid.Config) error
}

// Create refuses a KubeVirt when one exists anywhere in the cluster already, and a
// spec the operator could never install.
func (v *Validator) Create(ctx context.Context, kv *v1.KubeVirt, existing []v1.KubeVirt) Verdict {
	if len(existing) > 0 {
		return refuse("%s", AlreadyCreated)
	}
	return v.validSpec(ctx, kv)
}

// Update checks the new spec, but only when it changed: writes of metadata (the
// operator's finalizer) must pass even if an old spec would not.
func (v *Validator) Update(ctx context.Context, old, kv *v1.KubeVirt) Verdict {
	if equality.Semantic.DeepEqual(old.Spec, kv.Spec) {
		return allow()
	}
	return v.validSpec(ctx, kv)
}

// Delete refuses to uninstall a deployed KubeVirt whose uninstallStrategy is
// BlockUninstallIfWorkloadsExist (also when unset: the default) while workloads
// exist, or may exist: the deletion would take every VM with the CRDs. count
// is called only for such a delete, so a kind that cannot be counted blocks no
// other; a count that fails, or a kind it could not count, refuses the delete,
// naming why and the override.
func Delete(kv *v1.KubeVirt, count func() (workloads.Counts, error)) Verdict {
	if kv.Spec.UninstallStrategy == v1.UninstallStrategyRemoveWorkloads || kv.Status.Phase != v1.KubeVirtPhaseDeployed {
		return allow()
	}
	counts, err := count()
	switch {
	case err != nil:
		return refuse("Rejecting the uninstall request, since the KubeVirt related workloads cannot be counted: %v. "+
			"Set uninstallStrategy: RemoveWorkloads to uninstall KubeVirt with whatever workloads exist.", err)
	case len(counts.Unknown()) > 0:
		return refuse("Rejecting the uninstall request, since there may still be workloads present: %s. "+
			"Either delete all KubeVirt related workloads and let virt-operator count them, or change the uninstall strategy to RemoveWorkloads before uninstalling KubeVirt.", counts)
	case counts.Total() == 0:
		return allow()
	}
	return refuse("Rejecting the uninstall request, since there are still %s present. Either delete all KubeVirt related workloads or change the uninstall strategy before uninstalling KubeVirt.", counts)
}

// validSpec finds what the operator would refuse to install, or would hold on
// forever, naming the field. It stops at the first check that fails (each
// check names every field it finds wrong), so a value several readers read is
// reported once:
//
//  1. infra.replicas 0 and a feature gate both enabled and disabled;
//  2. the deployment config, as the operator builds it (deployid.FromKubeVirt:
//     image tag and registry, synchronization port, pull policy, every duration);
//  3. the product labels (the operator leaves out a value that is no label
//     value, as upstream does: refused here rather than dropped in silence);
//  4. the certificate rotation policy (certs.PolicyFrom: the minimum lifetimes),
//     the virt-handler rollout policy (rollout.PolicyFrom), the rollout and
//     workload-update windows (maintenance.Check: a window that can never
//     open), the workload-update settings;
//  5. what the API server would refuse in the objects the spec names or
//     places: the monitoring namespaces and account (generate's own check,
//     for each namespace the strategy Job may find Prometheus in), and
//     spec.infra's and spec.workloads' nodePlacement as a pod template
//     carries it (placement.go);
//  6. customizeComponents: the size of the patches' text (apply's limit, before
//     anything is decoded) and their syntax, then, for a release the builtin
//     generator knows, a dry run, whatever the spec: the release rendered for
//     this config and customized as the operator customizes it (apply.Prepare,
//     within its limits), so a patch naming a field the object does not have,
//     a JSON-patch path the release lacks, or a patch over a limit is refused,
//     and the customized objects' labels, annotations and pod placement
//     checked as the API server will. A release delegated to its own operator
//     image gets the syntax check only: its strategy exists only once its Job
//     ran.
func (v *Validator) validSpec(ctx context.Context, kv *v1.KubeVirt) Verdict {
	s := &kv.Spec
	if s.Infra != nil && s.Infra.Replicas != nil && *s.Infra.Replicas == 0 {
		return refuse("spec.infra.replicas: must not be 0")
	}
	if d := s.Configuration.DeveloperConfiguration; d != nil {
		for _, g := range d.FeatureGates {
			if slices.Contains(d.DisabledFeatureGates, g) {
				return refuse("spec.configuration.developerConfiguration: feature gate %s is both enabled and disabled", g)
			}
		}
	}
	cfg, err := deployid.FromKubeVirt(kv, v.env())
	if err != nil {
		return refuse("%s", oneLine(err))
	}
	if err := productLabels(s); err != nil {
		return refuse("%s", oneLine(err))
	}
	if _, err := certs.PolicyFrom(s.CertificateRotateStrategy); err != nil {
		return refuse("%s", oneLine(err))
	}
	if _, err := rollout.PolicyFrom(s.HandlerRollout); err != nil {
		return refuse("%s", oneLine(err))
	}
	if err := windows(s); err != nil {
		return refuse("%s", oneLine(err))
	}
	if err := workloadupdate.SettingsFrom(kv).Invalid; err != nil {
		return refuse("%s", oneLine(err))
	}
	for _, ns := range cfg.PotentialMonitorNamespaces() {
		if err := generate.ValidateMonitoring(cfg, ns); err != nil {
			return refuse("%s", oneLine(err))
		}
	}
	if err := placements(s); err != nil {
		return refuse("%s", oneLine(err))
	}
	if err := apply.CheckPatchText(s.CustomizeComponents.Patches); err != nil {
		return refuse("spec.%s", oneLine(err))
	}
	for i, p := range s.CustomizeComponents.Patches {
		if err := patchSyntax(p); err != nil {
			return refuse("spec.customizeComponents.patches[%d] (%s %s): %v", i, p.ResourceType, p.ResourceName, err)
		}
	}
	if err := v.dryRun(ctx, cfg); err != nil {
		return refuse("%s", oneLine(err))
	}
	return allow()
}

func (v *Validator) env() deployid.Env {
	if v.Env == nil {
		return deployid.OSEnv{}
	}
	return v.Env
}

// oneLine joins the lines of a joined error with "; ", for an admission message.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// productLabels refuses product values that are no label values: they label
// every object the operator creates (app.kubernetes.io/version, part-of,
// component), and the operator leaves such a value out.
func productLabels(s *v1.KubeVirtSpec) error {
	var errs []error
	for _, f := range []struct{ path, label, value string }{
		{"spec.productVersion", metadata.AppVersionLabel, s.ProductVersion},
		{"spec.productName", metadata.AppPartOfLabel, s.ProductName},
		{"spec.productComponent", metadata.AppComponentLabel, s.ProductComponent},
	} {
		if msgs := validation.IsValidLabelValue(f.value); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s: %q becomes the %s label of every object the operator creates, and is no label value: %s",
				f.path, f.value, f.label, strings.Join(msgs, "; ")))
		}
	}
	return errors.Join(errs...)
}

// windows refuses a rollout or workload-update window that can never open: the
// operator would hold the rollout, or the workload updates, on it forever.
func windows(s *v1.KubeVirtSpec) error {
	var errs []error
	check := func(path string, ws []v1.MaintenanceWindow) {
		for i, w := range ws {
			if err := maintenance.Check(w); err != nil {
				errs = append(errs, fmt.Errorf("%s[%d] never opens: %w", path, i, err))
			}
		}
	}
	check("spec.rolloutWindows", s.RolloutWindows)
	if s.WorkloadUpdates != nil {
		check("spec.workloadUpdates.windows", s.WorkloadUpdates.Windows)
	}
	return errors.Join(errs...)
}

// placements refuses a nodePlacement of spec.infra or spec.workloads that the
// API server would refuse in the components' pod templates.
func placements(s *v1.KubeVirtSpec) error {
	var errs field.ErrorList
	for _, c := range []struct {
		name string
		cc   *v1.ComponentConfig
	}{{"infra", s.Infra}, {"workloads", s.Workloads}} {
		if c.cc != nil {
			errs = append(errs, nodePlacement(c.cc.NodePlacement, field.NewPath("spec", c.name, "nodePlacement"))...)
		}
	}
	return errs.ToAggregate()
}

// dryRunTimeout bounds a dry run, the wait for the one before it included.
// The API server gives the webhook 10 s (its timeoutSeconds), after which it
// refuses with a timeout that says nothing of the spec; a dry run takes
// about 50 ms, and Prepare's limits bound what patches can add to it.
const dryRunTimeout = 5 * time.Second

// dryRun renders the strategy of cfg's release and customizes it as the
// operator will (apply.Prepare), when the builtin generator knows the
// release: a *apply.PatchError names the patch (spec.customizeComponents.patches[i])
// and the object it does not apply to, or the limit it is over. The
// customized objects are then checked as the API server will check them
// (rendered). The strategy is rendered without monitoring: monitoring adds no
// object a patch can target (Roles, RoleBindings, a ServiceMonitor, a
// PrometheusRule), and its names are checked on their own.
//
// A render takes about 50 ms (240 ms the first time a release is rendered in the
// process) and allocates about 28 MB, of which 7 MB stay while it is used: well
// within the webhook's 10 s, and not worth keeping 7 MB per release in every
// replica for spec edits, which are rare, so nothing is cached. Renders run
// one at a time, which bounds the memory they take: one past its deadline
// finishes on its own (Prepare's limits bound it) and only then lets the
// next one start.
func (v *Validator) dryRun(ctx context.Context, cfg *deployid.Config) error {
	if _, builtin := release.Lookup(cfg.KubeVirtVersion); !builtin {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, dryRunTimeout)
	defer cancel()
	v.rendersOnce.Do(func() { v.renders = make(chan struct{}, 1) })
	select {
	case v.renders <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("spec: not checked in time (another check is under way): %w", ctx.Err())
	}
	work := v.render
	if work == nil {
		work = render
	}
	done := make(chan error, 1)
	go func() {
		defer func() { <-v.renders }()
		done <- work(cfg)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("spec: not checked in time (rendering KubeVirt %s for it): %w", cfg.KubeVirtVersion, ctx.Err())
	}
}

// render is the dry run itself.
func render(cfg *deployid.Config) error {
	base := cfg.DeepCopy()
	base.CustomizeComponents, base.Infra, base.Workloads = nil, nil, nil
	base.ID = base.ComputeID()
	s, err := generate.Generate(generate.Input{Config: base})
	if err != nil {
		return fmt.Errorf("KubeVirt %s cannot be rendered: %w", cfg.KubeVirtVersion, err)
	}
	prepared, err := apply.Prepare(s, cfg)
	if err != nil {
		var pe *apply.PatchError
		if errors.As(err, &pe) {
			return fmt.Errorf("spec.%w (KubeVirt %s)", pe, cfg.KubeVirtVersion)
		}
		return fmt.Errorf("spec.customizeComponents: %w", err)
	}
	return rendered(prepared)
}

// rendered refuses a customized object the API server would refuse for its
// labels, annotations or pod placement. Placement from spec.infra and
// spec.workloads is checked before, naming those fields, so what is found
// here comes of customizeComponents.
func rendered(s *strategy.Strategy) error {
	for _, o := range s.Objects() {
		errs := objectMeta(&metav1.ObjectMeta{Labels: o.GetLabels(), Annotations: o.GetAnnotations()}, field.NewPath("metadata"))
		switch w := o.(type) {
		case *appsv1.Deployment:
			errs = append(errs, podTemplate(&w.Spec.Template)...)
		case *appsv1.DaemonSet:
			errs = append(errs, podTemplate(&w.Spec.Template)...)
		}
		if len(errs) > 0 {
			return fmt.Errorf("spec.customizeComponents: the API server would refuse the customized %s: %w", apply.RefOf(o), errs.ToAggregate())
		}
	}
	return nil
}

func podTemplate(t *corev1.PodTemplateSpec) field.ErrorList {
	errs := objectMeta(&t.ObjectMeta, field.NewPath("spec", "template", "metadata"))
	return append(errs, podPlacement(&t.Spec, field.NewPath("spec", "template", "spec"))...)
}

// patchSyntax checks that a patch is what its type says: a JSON patch is a list of
// operations, a merge or strategic patch an object.
func patchSyntax(p v1.CustomizeComponentsPatch) error {
	var doc any
	if err := json.Unmarshal([]byte(p.Patch), &doc); err != nil {
		return fmt.Errorf("the patch is not JSON: %w", err)
	}
	switch p.Type {
	case v1.JSONPatchType:
		ops, ok := doc.([]any)
		if !ok {
			return fmt.Errorf("a json patch must be a list of operations")
		}
		for j, op := range ops {
			m, ok := op.(map[string]any)
			if !ok || m["op"] == nil || m["path"] == nil {
				return fmt.Errorf("operation %d needs op and path", j)
			}
			if path, _ := m["path"].(string); !strings.HasPrefix(path, "/") {
				return fmt.Errorf("operation %d: path %q must start with /", j, path)
			}
		}
	case v1.MergePatchType, v1.StrategicMergePatchType:
		if _, ok := doc.(map[string]any); !ok {
			return fmt.Errorf("a %s patch must be an object", p.Type)
		}
	default:
		return fmt.Errorf("type %q is not json, merge or strategic", p.Type)
	}
	return nil
}
