package metadata

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
)

// Target is the deployment an object was rendered for, as the three
// install-strategy annotations record it.
type Target struct {
	Version, Registry, ID string
}

// TargetOf is the target a config renders.
func TargetOf(cfg *deployid.Config) Target {
	return Target{Version: cfg.KubeVirtVersion, Registry: cfg.Registry, ID: cfg.ID}
}

// TargetFromStatus is the target recorded in status.target*.
func TargetFromStatus(st *v1.KubeVirtStatus) Target {
	return Target{Version: st.TargetKubeVirtVersion, Registry: st.TargetKubeVirtRegistry, ID: st.TargetDeploymentID}
}

// ObservedFromStatus is the last fully rolled-out target, from status.observed*.
func ObservedFromStatus(st *v1.KubeVirtStatus) Target {
	return Target{Version: st.ObservedKubeVirtVersion, Registry: st.ObservedKubeVirtRegistry, ID: st.ObservedDeploymentID}
}

// Inject stamps the operator's labels and the install-strategy annotations of cfg
// onto obj (a created object, or a pod template's metadata via InjectPodTemplate).
//
// Labels, as upstream (§4.5): managed-by=virt-operator; version = productVersion and
// part-of = productName, each only when set and a valid label value (otherwise the
// strategy's own app.kubernetes.io/version, the KubeVirt version, stays); component
// = productComponent when valid, else "kubevirt". Inject runs on a fresh copy of the
// strategy every time, so a product value removed from the spec leaves nothing stale.
func Inject(obj metav1.Object, cfg *deployid.Config) {
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[ManagedByLabel] = ManagedByValue
	setIfValid(labels, AppVersionLabel, cfg.ProductVersion())
	setIfValid(labels, AppPartOfLabel, cfg.ProductName())
	component := validLabelValue(cfg.ProductComponent())
	if component == "" {
		component = DefaultAppComponent
	}
	labels[AppComponentLabel] = component
	obj.SetLabels(labels)

	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	t := TargetOf(cfg)
	annotations[InstallStrategyVersionAnnotation] = t.Version
	annotations[InstallStrategyRegistryAnnotation] = t.Registry
	annotations[InstallStrategyIdentifierAnnotation] = t.ID
	obj.SetAnnotations(annotations)
}

// InjectPodTemplate stamps a pod template like Inject. Pods then carry the target,
// which is how readiness and the canary tell new pods from old ones. It never sets
// GenerationAnnotation: a template change restarts pods, a generation bump must not.
func InjectPodTemplate(tmpl *corev1.PodTemplateSpec, cfg *deployid.Config) {
	Inject(&tmpl.ObjectMeta, cfg)
}

// InjectGeneration records the KubeVirt generation an object was last applied for.
// Call it on top-level objects only (see InjectPodTemplate).
func InjectGeneration(obj metav1.Object, generation int64) {
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[GenerationAnnotation] = strconv.FormatInt(generation, 10)
	obj.SetAnnotations(annotations)
}

// IsManaged reports whether obj carries our managed-by label, old value included.
// ManagedSelector selects the objects IsManaged reports.
func ManagedSelector() labels.Selector {
	req, err := labels.NewRequirement(ManagedByLabel, selection.In, []string{ManagedByValue, LegacyManagedByValue})
	if err != nil {
		panic(err) // constant label and values
	}
	return labels.NewSelector().Add(*req)
}

func IsManaged(obj metav1.Object) bool {
	v := obj.GetLabels()[ManagedByLabel]
	return v == ManagedByValue || v == LegacyManagedByValue
}

// validLabelValue returns v if it may be a label value, else "" (upstream logs
// and drops an invalid product value rather than failing the install).
func validLabelValue(v string) string {
	if len(validation.IsValidLabelValue(v)) > 0 {
		return ""
	}
	return v
}

func setIfValid(m map[string]string, key, value string) {
	if v := validLabelValue(value); v != "" {
		m[key] = v
	}
}
