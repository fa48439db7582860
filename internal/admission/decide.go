package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/maintenance"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/release"
	"github.com/virt-operator/virt-operator/internal/rollout"
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
	// about 28 MB, and requests that change a customized spec are rare.
	rendersOnce sync.Once
	renders     chan struct{}
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
//  5. customizeComponents: the patches' syntax, then, for a release the builtin
//     generator knows, a dry run: the release rendered for this config and the
//     customizations applied as the operator applies them (apply.Prepare), so a
//     patch naming a field the object does not have, or a JSON-patch path the
//     release lacks, is refused. A release delegated to its own operator image
//     gets the syntax check only: its strategy exists only once its Job ran.
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

// dryRun applies cfg's customizations to the strategy of its release, as the
// operator will (apply.Prepare), when the builtin generator knows the release:
// a *apply.PatchError names the patch (spec.customizeComponents.patches[i]) and
// the object it does not apply to. The strategy is rendered without the
// customizations and without monitoring: monitoring adds no object a patch can
// target (Roles, RoleBindings, a ServiceMonitor, a PrometheusRule).
//
// A render takes about 50 ms (240 ms the first time a release is rendered in the
// process) and allocates about 28 MB, of which 7 MB stay while it is used: well
// within the webhook's 10 s, and not worth keeping 7 MB per release in every
// replica for requests this rare, so nothing is cached. Renders run one at a
// time, which bounds the memory they take.
func (v *Validator) dryRun(ctx context.Context, cfg *deployid.Config) error {
	if cfg.CustomizeComponents == nil {
		return nil
	}
	if _, builtin := release.Lookup(cfg.KubeVirtVersion); !builtin {
		return nil
	}
	v.rendersOnce.Do(func() { v.renders = make(chan struct{}, 1) })
	select {
	case v.renders <- struct{}{}:
		defer func() { <-v.renders }()
	case <-ctx.Done():
		return fmt.Errorf("spec.customizeComponents: not checked in time: %w", ctx.Err())
	}
	base := cfg.DeepCopy()
	base.CustomizeComponents, base.Infra, base.Workloads = nil, nil, nil
	base.ID = base.ComputeID()
	s, err := generate.Generate(generate.Input{Config: base})
	if err != nil {
		return fmt.Errorf("KubeVirt %s cannot be rendered: %w", cfg.KubeVirtVersion, err)
	}
	if _, err := apply.Prepare(s, cfg); err != nil {
		var pe *apply.PatchError
		if errors.As(err, &pe) {
			return fmt.Errorf("spec.%w (KubeVirt %s)", pe, cfg.KubeVirtVersion)
		}
		return fmt.Errorf("spec.customizeComponents: %w", err)
	}
	return nil
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
