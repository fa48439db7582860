package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/workloads"
)

func kubeVirt(edit func(*v1.KubeVirt)) *v1.KubeVirt {
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "kubevirt"}}
	if edit != nil {
		edit(kv)
	}
	return kv
}

// validator reads specs as an operator whose environment names no release
// (the default, v1.9.0, from quay.io/kubevirt).
func validator() *Validator { return &Validator{Env: deployid.MapEnv{}} }

func TestCreate(t *testing.T) {
	v := validator()
	if got := v.Create(t.Context(), kubeVirt(nil), nil); !got.Allowed {
		t.Errorf("the first KubeVirt is refused: %s", got.Message)
	}
	existing := []v1.KubeVirt{*kubeVirt(func(kv *v1.KubeVirt) { kv.Namespace = "elsewhere" })}
	if got := v.Create(t.Context(), kubeVirt(nil), existing); got.Allowed || got.Message != AlreadyCreated {
		t.Errorf("a second KubeVirt: %+v", got)
	}
	bad := kubeVirt(func(kv *v1.KubeVirt) { zero := uint8(0); kv.Spec.Infra = &v1.ComponentConfig{Replicas: &zero} })
	if got := v.Create(t.Context(), bad, nil); got.Allowed || !strings.Contains(got.Message, "spec.infra.replicas") {
		t.Errorf("infra replicas 0: %+v", got)
	}
}

func TestUpdateChecksOnlyAChangedSpec(t *testing.T) {
	v := validator()
	badSpec := func(kv *v1.KubeVirt) {
		kv.Spec.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{FeatureGates: []string{"Template"}, DisabledFeatureGates: []string{"Template"}}
		kv.Spec.SynchronizationPort = "http"
	}
	old := kubeVirt(badSpec)
	withFinalizer := kubeVirt(badSpec)
	withFinalizer.Finalizers = []string{"kubevirt.io/foregroundDeleteKubeVirt"}
	if got := v.Update(t.Context(), old, withFinalizer); !got.Allowed {
		t.Errorf("a metadata-only update of a KubeVirt with a bad spec is refused (the operator's finalizer would be stuck): %s", got.Message)
	}
	if got := v.Update(t.Context(), kubeVirt(nil), kubeVirt(badSpec)); got.Allowed || !strings.Contains(got.Message, "Template is both enabled and disabled") {
		t.Errorf("a gate both enabled and disabled: %+v", got)
	}
	// An upgrade is checked against the new release's strategy.
	patched := func(tag string) *v1.KubeVirt {
		return kubeVirt(func(kv *v1.KubeVirt) {
			kv.Spec.ImageTag = tag
			kv.Spec.CustomizeComponents.Patches = []v1.CustomizeComponentsPatch{{ResourceType: "Deployment", ResourceName: "virt-api", Type: v1.JSONPatchType,
				Patch: `[{"op":"remove","path":"/spec/template/spec/containers/0/readinessProbe/httpGet"}]`}}
		})
	}
	if got := v.Update(t.Context(), patched("v1.8.4"), patched("v1.9.0")); !got.Allowed {
		t.Errorf("an upgrade whose patch applies to the new release: %s", got.Message)
	}
}

// Every spec the operator would refuse or hold on forever is refused, and the
// message names the field.
func TestSpecValidation(t *testing.T) {
	patch := func(typ v1.PatchType, resourceType, name, body string) func(*v1.KubeVirt) {
		return func(kv *v1.KubeVirt) {
			kv.Spec.CustomizeComponents.Patches = append(kv.Spec.CustomizeComponents.Patches,
				v1.CustomizeComponentsPatch{ResourceType: resourceType, ResourceName: name, Type: typ, Patch: body})
		}
	}
	apiPatch := func(typ v1.PatchType, body string) func(*v1.KubeVirt) {
		return patch(typ, "Deployment", "virt-api", body)
	}
	both := func(edits ...func(*v1.KubeVirt)) func(*v1.KubeVirt) {
		return func(kv *v1.KubeVirt) {
			for _, e := range edits {
				e(kv)
			}
		}
	}
	tag := func(t string) func(*v1.KubeVirt) { return func(kv *v1.KubeVirt) { kv.Spec.ImageTag = t } }
	certs := func(ca, server *v1.CertConfig) func(*v1.KubeVirt) {
		return func(kv *v1.KubeVirt) {
			kv.Spec.CertificateRotateStrategy.SelfSigned = &v1.KubeVirtSelfSignConfiguration{CA: ca, Server: server}
		}
	}
	d := func(x time.Duration) *v1.Duration { return &v1.Duration{Duration: x} }
	invalid := func(raw string) *v1.Duration { return &v1.Duration{Invalid: raw} }
	win := func(start string, x time.Duration, tz string) v1.MaintenanceWindow {
		return v1.MaintenanceWindow{Start: start, Duration: v1.Duration{Duration: x}, TimeZone: tz}
	}
	typo := `[{"op":"replace","path":"/spec/template/spec/containers/0/livenessProbe/periodSeconds","value":5}]`
	infra := func(kv *v1.KubeVirt) **v1.ComponentConfig { return &kv.Spec.Infra }
	workloads := func(kv *v1.KubeVirt) **v1.ComponentConfig { return &kv.Spec.Workloads }
	placed := func(which func(*v1.KubeVirt) **v1.ComponentConfig, p *v1.NodePlacement) func(*v1.KubeVirt) {
		return func(kv *v1.KubeVirt) { *which(kv) = &v1.ComponentConfig{NodePlacement: p} }
	}
	nodeAffinity := func(rq corev1.NodeSelectorRequirement) *v1.NodePlacement {
		return &v1.NodePlacement{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{rq}}}}}}}
	}
	for _, tc := range []struct {
		name string
		edit func(*v1.KubeVirt)
		want []string // nil: allowed
	}{
		// customizeComponents: syntax, then the dry run against the release.
		{"json patch", apiPatch(v1.JSONPatchType, `[{"op":"replace","path":"/spec/replicas","value":3}]`), nil},
		{"merge patch", apiPatch(v1.MergePatchType, `{"metadata":{"labels":{"a":"b"}}}`), nil},
		{"strategic patch", apiPatch(v1.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"name":"virt-api","resources":{"requests":{"memory":"1Gi"}}}]}}}}`), nil},
		{"a patch of every Deployment", patch(v1.MergePatchType, "Deployment", "*", `{"metadata":{"annotations":{"a":"b"}}}`), nil},
		{"a patch of an object the release does not have", patch(v1.JSONPatchType, "Deployment", "virt-nothing", typo), nil},
		{"flags", func(kv *v1.KubeVirt) { kv.Spec.CustomizeComponents.Flags = &v1.Flags{API: map[string]string{"v": "4"}} }, nil},
		{"json patch that is an object", apiPatch(v1.JSONPatchType, `{"op":"add"}`), []string{"spec.customizeComponents.patches[0]", "a json patch must be a list of operations"}},
		{"json patch without a path", apiPatch(v1.JSONPatchType, `[{"op":"add","value":1}]`), []string{"spec.customizeComponents.patches[0]", "operation 0 needs op and path"}},
		{"json patch path not absolute", apiPatch(v1.JSONPatchType, `[{"op":"add","path":"spec","value":1}]`), []string{"spec.customizeComponents.patches[0]", `path "spec" must start with /`}},
		{"merge patch that is a list", apiPatch(v1.MergePatchType, `[1]`), []string{"spec.customizeComponents.patches[0]", "a merge patch must be an object"}},
		{"not JSON", apiPatch(v1.StrategicMergePatchType, `{`), []string{"spec.customizeComponents.patches[0]", "the patch is not JSON"}},
		{"unknown type", apiPatch("yaml", `{}`), []string{`customizeComponents.patches[0].type "yaml"`}},
		{"a json patch path the release lacks", apiPatch(v1.JSONPatchType, typo),
			[]string{"spec.customizeComponents.patches[0]", "does not apply to Deployment", "virt-api", "livenessProbe", "KubeVirt v1.9.0"}},
		{"a merge patch with a typo'd field", both(apiPatch(v1.MergePatchType, `{"metadata":{"labels":{"a":"b"}}}`), apiPatch(v1.MergePatchType, `{"spec":{"replica":3}}`)),
			[]string{"spec.customizeComponents.patches[1]", "virt-api", `unknown field "spec.replica"`}},
		{"a strategic patch with a typo'd field", patch(v1.StrategicMergePatchType, "DaemonSet", "virt-handler", `{"spec":{"template":{"spec":{"tolerationz":[]}}}}`),
			[]string{"spec.customizeComponents.patches[0]", "virt-handler", "tolerationz"}},
		{"a patch that renames the object", apiPatch(v1.MergePatchType, `{"metadata":{"name":"virt-api-2"}}`), []string{"spec.customizeComponents.patches[0]", "changes the object's kind, name or namespace"}},
		{"the same patch on v1.8.4", both(tag("v1.8.4"), apiPatch(v1.JSONPatchType, typo)), []string{"spec.customizeComponents.patches[0]", "KubeVirt v1.8.4"}},
		{"a release delegated to its own operator: syntax only", both(tag("v1.7.4"), apiPatch(v1.JSONPatchType, typo)), nil},
		// What the operator's deployment config refuses.
		{"synchronizationPort not a number", func(kv *v1.KubeVirt) { kv.Spec.SynchronizationPort = "http" }, []string{`spec.synchronizationPort: "http" is not a port number (1-65535)`}},
		{"synchronizationPort 0", func(kv *v1.KubeVirt) { kv.Spec.SynchronizationPort = "0" }, []string{"spec.synchronizationPort"}},
		{"synchronizationPort 65536", func(kv *v1.KubeVirt) { kv.Spec.SynchronizationPort = "65536" }, []string{"spec.synchronizationPort"}},
		{"synchronizationPort 9185", func(kv *v1.KubeVirt) { kv.Spec.SynchronizationPort = "9185" }, nil},
		{"a 75-character pre-release tag", tag("v1.9.0-" + strings.Repeat("x", 68)), []string{"spec.imageTag", "app.kubernetes.io/version", "no label value", "63"}},
		{"a tag of 129 characters", tag(strings.Repeat("v", 129)), []string{"spec.imageTag", "is not an image tag", "128"}},
		{"a tag with a +", tag("v1.9.0+build.1"), []string{"spec.imageTag", "is not an image tag"}},
		{"a pre-release tag", tag("v1.9.0-rc.1"), nil},
		{"a digest", tag("sha256:" + strings.Repeat("ab", 32)), nil},
		{"a registry with capitals in its path", func(kv *v1.KubeVirt) { kv.Spec.ImageRegistry = "quay.io/KubeVirt" }, []string{"spec.imageRegistry", "is not an image registry"}},
		{"a registry with a scheme", func(kv *v1.KubeVirt) { kv.Spec.ImageRegistry = "https://quay.io/kubevirt" }, []string{"spec.imageRegistry"}},
		{"a registry with a port", func(kv *v1.KubeVirt) { kv.Spec.ImageRegistry = "registry.local:5000/kubevirt" }, nil},
		{"an unknown pull policy", func(kv *v1.KubeVirt) { kv.Spec.ImagePullPolicy = "Sometimes" }, []string{"imagePullPolicy"}},
		// Product labels: no label value.
		{"productVersion with a space", func(kv *v1.KubeVirt) { kv.Spec.ProductVersion = "1.0 beta" }, []string{"spec.productVersion", "app.kubernetes.io/version", "no label value"}},
		{"productName of 64 characters", func(kv *v1.KubeVirt) { kv.Spec.ProductName = strings.Repeat("p", 64) }, []string{"spec.productName", "app.kubernetes.io/part-of"}},
		{"productComponent starting with -", func(kv *v1.KubeVirt) { kv.Spec.ProductComponent = "-kv" }, []string{"spec.productComponent", "app.kubernetes.io/component"}},
		{"product labels", func(kv *v1.KubeVirt) {
			kv.Spec.ProductVersion, kv.Spec.ProductName, kv.Spec.ProductComponent = "4.18.1", "acme-virt", "compute"
		}, nil},
		// Certificates: a lifetime the rotation can keep up with.
		{"a certificate lifetime of one second", certs(nil, &v1.CertConfig{Duration: d(time.Second)}),
			[]string{"spec.certificateRotateStrategy.selfSigned.server.duration (1s) must be at least 1m0s"}},
		{"a renewBefore of 5s", certs(&v1.CertConfig{Duration: d(time.Hour), RenewBefore: d(5 * time.Second)}, nil),
			[]string{"spec.certificateRotateStrategy.selfSigned.ca.renewBefore (5s) must be at least 10s"}},
		{"renewBefore not shorter than duration", certs(nil, &v1.CertConfig{Duration: d(time.Hour), RenewBefore: d(time.Hour)}),
			[]string{"spec.certificateRotateStrategy.selfSigned.server.renewBefore (1h0m0s) must be shorter than"}},
		{"the shortest lifetimes", certs(&v1.CertConfig{Duration: d(2 * time.Minute)}, &v1.CertConfig{Duration: d(time.Minute), RenewBefore: d(10 * time.Second)}), nil},
		// Durations stored under an older CRD (no pattern) that are not Go durations.
		{"a certificate duration of 7d", certs(&v1.CertConfig{Duration: invalid(`"7d"`)}, nil),
			[]string{`spec.certificateRotateStrategy.selfSigned.ca.duration: "7d" is not a Go duration`}},
		{"a bake time that overflows", func(kv *v1.KubeVirt) {
			kv.Spec.HandlerRollout = &v1.HandlerRolloutPolicy{BakeTime: invalid(`"9999999999h"`)}
		},
			[]string{`spec.handlerRollout.bakeTime: "9999999999h" is not a Go duration`}},
		{"a retry backoff that is no duration", func(kv *v1.KubeVirt) {
			kv.Spec.WorkloadUpdates = &v1.WorkloadUpdatePolicy{RetryBackoff: invalid(`"soon"`)}
		}, []string{`spec.workloadUpdates.retryBackoff: "soon"`}},
		// The rollout policy.
		{"handler rollout", func(kv *v1.KubeVirt) {
			n := int32(-1)
			kv.Spec.HandlerRollout = &v1.HandlerRolloutPolicy{CanarySize: &n}
		}, []string{"spec.handlerRollout: canarySize"}},
		{"a progress deadline shorter than the bake", func(kv *v1.KubeVirt) {
			kv.Spec.HandlerRollout = &v1.HandlerRolloutPolicy{BakeTime: d(time.Minute), ProgressDeadline: d(time.Minute)}
		}, []string{"spec.handlerRollout: progressDeadline"}},
		// Windows that can never open.
		{"a rollout window in a time zone that does not exist", func(kv *v1.KubeVirt) {
			kv.Spec.RolloutWindows = []v1.MaintenanceWindow{win("02:00", time.Hour, "Europe/Berlin"), win("02:00", time.Hour, "Mars/Olympus")}
		}, []string{"spec.rolloutWindows[1] never opens", `time zone "Mars/Olympus"`}},
		{"a workload-update window in a time zone that does not exist", func(kv *v1.KubeVirt) {
			kv.Spec.WorkloadUpdates = &v1.WorkloadUpdatePolicy{Windows: []v1.MaintenanceWindow{win("02:00", time.Hour, "Atlantis/Central")}}
		}, []string{"spec.workloadUpdates.windows[0] never opens", `time zone "Atlantis/Central"`}},
		{"a window of 0", func(kv *v1.KubeVirt) { kv.Spec.RolloutWindows = []v1.MaintenanceWindow{win("02:00", 0, "")} }, []string{"spec.rolloutWindows[0] never opens", "duration 0s"}},
		{"a window longer than a week", func(kv *v1.KubeVirt) {
			kv.Spec.RolloutWindows = []v1.MaintenanceWindow{win("02:00", 8*24*time.Hour, "")}
		},
			[]string{"spec.rolloutWindows[0] never opens", "duration 192h0m0s"}},
		{"windows that open", func(kv *v1.KubeVirt) {
			kv.Spec.RolloutWindows = []v1.MaintenanceWindow{win("02:00", time.Hour, "America/New_York")}
			kv.Spec.WorkloadUpdates = &v1.WorkloadUpdatePolicy{Windows: []v1.MaintenanceWindow{win("23:30", 7*24*time.Hour, "")}}
		}, nil},
		// What the strategy Job's generator refuses (review 4 F10).
		{"a serviceMonitorNamespace that is no namespace", func(kv *v1.KubeVirt) { kv.Spec.ServiceMonitorNamespace = "Monitoring_NS" },
			[]string{`spec.serviceMonitorNamespace "Monitoring_NS" is no namespace name`}},
		{"a monitorNamespace that is no namespace", func(kv *v1.KubeVirt) { kv.Spec.MonitorNamespace = "monitoring.svc" },
			[]string{`monitor namespace "monitoring.svc" is no namespace name`}},
		{"a monitorAccount that is no ServiceAccount name", func(kv *v1.KubeVirt) { kv.Spec.MonitorAccount = "prometheus/k8s" },
			[]string{`spec.monitorAccount "prometheus/k8s" is no ServiceAccount name`}},
		{"monitoring names", func(kv *v1.KubeVirt) {
			kv.Spec.MonitorNamespace, kv.Spec.ServiceMonitorNamespace, kv.Spec.MonitorAccount = "prometheus", "kubevirt-monitoring", "prometheus-operator.k8s"
		}, nil},
		// What the API server refuses in the components' pod templates (F10).
		{"a nodeSelector key that is no label", placed(infra, &v1.NodePlacement{NodeSelector: map[string]string{"node role!": "x"}}),
			[]string{`spec.infra.nodePlacement.nodeSelector: Invalid value: "node role!"`}},
		{"a nodeSelector value that is no label value", placed(workloads, &v1.NodePlacement{NodeSelector: map[string]string{"role": "a b"}}),
			[]string{`spec.workloads.nodePlacement.nodeSelector: Invalid value: "a b"`}},
		{"a toleration operator that is none", placed(workloads, &v1.NodePlacement{Tolerations: []corev1.Toleration{{Key: "k", Operator: "Sometimes"}}}),
			[]string{`spec.workloads.nodePlacement.tolerations[0].operator: Unsupported value: "Sometimes"`}},
		{"a toleration with no key that is not Exists", placed(infra, &v1.NodePlacement{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpEqual, Value: "v"}}}),
			[]string{"spec.infra.nodePlacement.tolerations[0].operator", "must be Exists when key is empty"}},
		{"a toleration key that is no label", placed(infra, &v1.NodePlacement{Tolerations: []corev1.Toleration{{Key: "a/b/c", Operator: corev1.TolerationOpExists}}}),
			[]string{"spec.infra.nodePlacement.tolerations[0].key"}},
		{"an Exists toleration with a value", placed(infra, &v1.NodePlacement{Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}}}),
			[]string{"spec.infra.nodePlacement.tolerations[0].value", "must be empty when operator is Exists"}},
		{"an Equal toleration whose value is no label value", placed(infra, &v1.NodePlacement{Tolerations: []corev1.Toleration{{Key: "k", Value: "a b"}}}),
			[]string{"spec.infra.nodePlacement.tolerations[0].value"}},
		{"a taint effect that is none", placed(workloads, &v1.NodePlacement{Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: "NoScheduleEver"}}}),
			[]string{`spec.workloads.nodePlacement.tolerations[0].effect: Unsupported value: "NoScheduleEver"`}},
		{"tolerationSeconds without NoExecute", placed(workloads, &v1.NodePlacement{Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptr(int64(5))}}}),
			[]string{"spec.workloads.nodePlacement.tolerations[0].effect", "must be NoExecute when tolerationSeconds is set"}},
		{"a required node affinity without terms", placed(infra, &v1.NodePlacement{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}}),
			[]string{"spec.infra.nodePlacement.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value"}},
		{"a node selector In without values", placed(infra, nodeAffinity(corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn})),
			[]string{"nodeSelectorTerms[0].matchExpressions[0].values: Required value"}},
		{"a node selector operator that is none", placed(infra, nodeAffinity(corev1.NodeSelectorRequirement{Key: "zone", Operator: "Near"})),
			[]string{`nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "Near"`}},
		{"a node selector value that is no label value", placed(infra, nodeAffinity(corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a b"}})),
			[]string{"nodeSelectorTerms[0].matchExpressions[0].values[0]"}},
		{"a node field selector on a field that is none", placed(infra, &v1.NodePlacement{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "spec.unschedulable", Operator: corev1.NodeSelectorOpIn, Values: []string{"false"}}}}}}}}}),
			[]string{`matchFields[0].key: Invalid value: "spec.unschedulable"`}},
		{"a preferred node term of weight 0", placed(infra, &v1.NodePlacement{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}}}}}}}}),
			[]string{"preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100"}},
		{"a pod anti-affinity without a topologyKey", placed(infra, &v1.NodePlacement{Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubevirt.io": "virt-api"}}}}}}}),
			[]string{"spec.infra.nodePlacement.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value"}},
		{"a pod affinity label selector with an operator that is none", placed(infra, &v1.NodePlacement{Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near", Values: []string{"x"}}}}}}}}}}),
			[]string{"spec.infra.nodePlacement.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.labelSelector.matchExpressions[0].operator"}},
		{"a pod affinity namespace that is no namespace", placed(infra, &v1.NodePlacement{Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: "kubernetes.io/hostname", Namespaces: []string{"Kube_System"}}}}}}),
			[]string{"podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaces[0]"}},
		{"placements the API server takes", func(kv *v1.KubeVirt) {
			placed(infra, &v1.NodePlacement{NodeSelector: map[string]string{"node-role.kubernetes.io/infra": ""},
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}, {Key: "infra", Value: "yes", Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(30))}},
				Affinity: &corev1.Affinity{
					NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}, {Key: "cpus", Operator: corev1.NodeSelectorOpGt, Values: []string{"4"}}},
						MatchFields:      []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"node-1"}}}}}},
						PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100, Preference: corev1.NodeSelectorTerm{
							MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"not a label value, preferred"}}}}}}},
					PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{
						TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubevirt.io": "virt-api"}}, MatchLabelKeys: []string{"pod-template-hash"}}}}},
				}})(kv)
			placed(workloads, &v1.NodePlacement{Tolerations: []corev1.Toleration{{Key: "example.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}})(kv)
		}, nil},
		// What the API server refuses in the customized objects.
		{"a patch adding a label key that is no label", patch(v1.MergePatchType, "Deployment", "virt-api", `{"metadata":{"labels":{"a b":"c"}}}`),
			[]string{"spec.customizeComponents: the API server would refuse the customized Deployment kubevirt/virt-api", `metadata.labels: Invalid value: "a b"`}},
		{"a patch adding a toleration that is none", patch(v1.StrategicMergePatchType, "DaemonSet", "virt-handler", `{"spec":{"template":{"spec":{"tolerations":[{"key":"k","operator":"Sometimes"}]}}}}`),
			[]string{"the customized DaemonSet kubevirt/virt-handler", `spec.template.spec.tolerations[`, `operator: Unsupported value: "Sometimes"`}},
		{"a patch adding 300 KB of annotations", patch(v1.MergePatchType, "Service", "virt-api", `{"metadata":{"annotations":{"a":"`+strings.Repeat("x", 300<<10)+`"}}}`),
			[]string{"the customized Service kubevirt/virt-api", "metadata.annotations: Too long: may not be more than 262144 bytes"}},
		// What would take the memory or the time of the operator (review 4 F3).
		{"14 copies of virt-api's spec into itself", apiPatch(v1.JSONPatchType, copyBomb(14)),
			[]string{"spec.customizeComponents.patches[0] (type json, resourceType Deployment, resourceName virt-api) does not apply to Deployment kubevirt/virt-api", "copy operations add more than the limit of 3 MiB"}},
		{"1.2 MB of patches, for a delegated release too", both(tag("v1.7.4"), apiPatch(v1.MergePatchType, `{"metadata":{"annotations":{"a":"`+strings.Repeat("x", 600<<10)+`"}}}`),
			apiPatch(v1.MergePatchType, `{"metadata":{"annotations":{"b":"`+strings.Repeat("x", 600<<10)+`"}}}`)),
			[]string{"spec.customizeComponents.patches[1] (type merge, resourceType Deployment, resourceName virt-api): the patches up to this one have", "over the limit of 1 MiB"}},
		{"a strategic list of 8,000 elements", apiPatch(v1.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[`+strings.Repeat(`{"name":"c"},`, 7999)+`{"name":"c"}]}}}}`),
			[]string{"spec.customizeComponents.patches[0]", "over the limit of 10000000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := validator().Create(t.Context(), kubeVirt(tc.edit), nil)
			if tc.want == nil && !got.Allowed {
				t.Errorf("refused: %s", got.Message)
			}
			if tc.want == nil {
				return
			}
			if got.Allowed {
				t.Fatalf("allowed, want a refusal naming %q", tc.want)
			}
			t.Log(got.Message)
			for _, w := range tc.want {
				if !strings.Contains(got.Message, w) {
					t.Errorf("the message %q does not say %q", got.Message, w)
				}
			}
		})
	}
}

// A dry run waits for the one before it, but never past the request's deadline;
// it runs whether or not the spec has customizations.
func TestDryRunWaitsWithinTheDeadline(t *testing.T) {
	v := validator()
	v.rendersOnce.Do(func() { v.renders = make(chan struct{}, 1) })
	v.renders <- struct{}{} // a render under way
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	kv := kubeVirt(nil)
	if got := v.Create(ctx, kv, nil); got.Allowed || !strings.Contains(got.Message, "spec: not checked in time (another check is under way)") {
		t.Errorf("%+v", got)
	}
	<-v.renders
	if got := v.Create(t.Context(), kv, nil); !got.Allowed {
		t.Errorf("once the render is done: %s", got.Message)
	}
}

// A render past the deadline is refused in time; it still holds its place
// until it finishes, so renders abandoned by their requests never pile up.
func TestDryRunHasADeadline(t *testing.T) {
	v := validator()
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	v.render = func(*deployid.Config) error {
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
		return nil
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if got := v.Create(ctx, kubeVirt(nil), nil); got.Allowed || !strings.Contains(got.Message, "spec: not checked in time (rendering KubeVirt v1.9.0 for it)") {
		t.Errorf("a render past the deadline: %+v", got)
	}
	<-started
	ctx, cancel = context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if got := v.Create(ctx, kubeVirt(nil), nil); got.Allowed || !strings.Contains(got.Message, "another check is under way") {
		t.Errorf("while the abandoned render runs: %+v", got)
	}
	close(release)
	if got := v.Create(t.Context(), kubeVirt(nil), nil); !got.Allowed {
		t.Errorf("once the abandoned render is done: %s", got.Message)
	}
}

func ptr[T any](v T) *T { return &v }

// copyBomb copies virt-api's spec into itself n times: each copy doubles it.
func copyBomb(n int) string {
	ops := []string{`{"op":"add","path":"/spec/template/metadata/annotations","value":{}}`}
	for i := range n {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/spec","path":"/spec/template/metadata/annotations/x%d"}`, i))
	}
	return "[" + strings.Join(ops, ",") + "]"
}

// A delete of a Deployed KubeVirt under BlockUninstallIfWorkloadsExist is
// refused while workloads exist or may exist (a kind that cannot be counted, a
// count that fails), naming them and the override; any other delete is
// decided without counting, so a count the RBAC forbids blocks none of them.
func TestDelete(t *testing.T) {
	deployed := func(kv *v1.KubeVirt) { kv.Status.Phase = v1.KubeVirtPhaseDeployed }
	kind := func(crd, kind string, n int) workloads.KindCount {
		return workloads.KindCount{Kind: workloads.Kind{CRD: crd, GVK: schema.GroupVersionKind{Kind: kind}}, N: n}
	}
	some := workloads.Counts{kind("virtualmachineinstances.kubevirt.io", "VirtualMachineInstance", 2), kind("virtualmachines.kubevirt.io", "VirtualMachine", 0),
		kind("virtualmachinesnapshots.snapshot.kubevirt.io", "VirtualMachineSnapshot", 1), kind("migrationpolicies.migrations.kubevirt.io", "MigrationPolicy", 1)}
	forbidden := kind("virtualmachinesnapshotschedules.snapshot.kubevirt.io", "VirtualMachineSnapshotSchedule", 0)
	forbidden.Unknown = `forbidden: User "system:serviceaccount:kubevirt:kubevirt-operator" cannot list resource "virtualmachinesnapshotschedules"`
	uncountable := workloads.Counts{kind("virtualmachines.kubevirt.io", "VirtualMachine", 0), forbidden}
	const counts = "there are still 2 VirtualMachineInstances, 1 VirtualMachineSnapshots, 1 MigrationPolicies present"
	for _, tc := range []struct {
		name   string
		kv     *v1.KubeVirt
		counts workloads.Counts
		err    error
		// want is what the refusal says; "" when allowed.
		want []string
	}{
		{"deployed with workloads, default strategy", kubeVirt(deployed), some, nil, []string{counts}},
		{"BlockUninstallIfWorkloadsExist", kubeVirt(func(kv *v1.KubeVirt) {
			deployed(kv)
			kv.Spec.UninstallStrategy = v1.UninstallStrategyBlockUninstallIfWorkloadsExist
		}), some, nil, []string{counts}},
		{"no workloads", kubeVirt(deployed), workloads.Counts{kind("virtualmachines.kubevirt.io", "VirtualMachine", 0)}, nil, nil},
		{"a kind that cannot be counted", kubeVirt(deployed), uncountable, nil, []string{"there may still be workloads present",
			"VirtualMachineSnapshotSchedules: cannot be counted: " + forbidden.Unknown, "RemoveWorkloads"}},
		{"a count that fails", kubeVirt(deployed), nil, errors.New("listing the managed CRDs: timeout"), []string{"cannot be counted: listing the managed CRDs: timeout", "RemoveWorkloads"}},
		{"RemoveWorkloads", kubeVirt(func(kv *v1.KubeVirt) { deployed(kv); kv.Spec.UninstallStrategy = v1.UninstallStrategyRemoveWorkloads }), nil, nil, nil},
		{"not deployed yet", kubeVirt(nil), nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counted := false
			v := Delete(tc.kv, func() (workloads.Counts, error) {
				counted = true
				return tc.counts, tc.err
			})
			if v.Allowed != (tc.want == nil) {
				t.Fatalf("%+v", v)
			}
			for _, want := range tc.want {
				if !strings.Contains(v.Message, want) {
					t.Errorf("the refusal does not say %q: %s", want, v.Message)
				}
			}
			if needed := tc.counts != nil || tc.err != nil; counted != needed {
				t.Errorf("counted %v, want %v: only a delete the count decides counts", counted, needed)
			}
		})
	}
}
