package upgradeplan

import (
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/storedversions"
)

var t0 = time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)

func deployment(name, image string) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kubevirt", Annotations: map[string]string{"kubevirt.io/install-strategy-version": image}},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubevirt.io": name}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "quay.io/kubevirt/" + name + ":" + image}}}}},
	}
}

func readyPod(name, app string, start time.Duration) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kubevirt", Labels: map[string]string{"kubevirt.io": app},
		CreationTimestamp: metav1.NewTime(t0)},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(t0.Add(start))}}}}
}

func TestFieldChanges(t *testing.T) {
	got := FieldChanges(deployment("virt-api", "v1.8.4"), deployment("virt-api", "v1.9.0"))
	if len(got) != 1 || got[0] != "spec.template.spec.containers[0].image: quay.io/kubevirt/virt-api:v1.8.4 -> quay.io/kubevirt/virt-api:v1.9.0" {
		t.Fatalf("changes %q: want the image only (version stamps are bookkeeping)", got)
	}
	meta := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "kubevirt"}}
	if got := FieldChanges(meta, deployment("x", "v2")); len(got) != 0 {
		t.Fatalf("a metadata-only live copy: %q", got)
	}
}

func TestMake(t *testing.T) {
	oldCfg := &deployid.Config{Namespace: "kubevirt", Registry: "quay.io/kubevirt", KubeVirtVersion: "v1.8.4"}
	oldCfg.ID = oldCfg.ComputeID()
	newCfg := &deployid.Config{Namespace: "kubevirt", Registry: "quay.io/kubevirt", KubeVirtVersion: "v1.9.0"}
	newCfg.ID = newCfg.ComputeID()
	liveAPI := deployment("virt-api", "v1.8.4")
	replicas := int32(2)
	liveAPI.Spec.Replicas = &replicas
	wantAPI, wantNew := deployment("virt-api", "v1.9.0"), deployment("virt-template", "v0.2")
	wantAPI.Spec.Replicas = &replicas
	seconds := int64(4)
	current := &v1.KubeVirt{Status: v1.KubeVirtStatus{History: []v1.DeploymentRecord{{DeploymentID: oldCfg.ID, ToVersion: "v1.8.4", Outcome: "Succeeded",
		Phases: []v1.DeploymentPhase{{Name: "InstallStrategy", Seconds: &seconds}}}}}}
	newKV := &v1.KubeVirt{Spec: v1.KubeVirtSpec{WorkloadUpdates: &v1.WorkloadUpdatePolicy{Methods: []v1.WorkloadUpdateMethod{"LiveMigrate"}}}}
	vmi := v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns"},
		Status: v1.VirtualMachineInstanceStatus{Phase: v1.VMIRunning, NodeName: "n1", LauncherContainerImageVersion: oldCfg.Image(deployid.Launcher),
			Conditions: []v1.VirtualMachineInstanceCondition{{Type: v1.VMIConditionLiveMigratable, Status: corev1.ConditionTrue}}}}
	orphan := deployment("virt-gone", "v1.8.4")
	withData := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "plugins.plugin.kubevirt.io"}}
	// Retained before it was named, holding as many objects as then: deleted.
	named := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "virtualmachineclones.clone.kubevirt.io"}}
	uncounted := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "virtualmachinesnapshotschedules.snapshot.kubevirt.io"}}
	two := 2
	p := Make(Input{Current: current, NewKubeVirt: newKV, CurrentConfig: oldCfg, NewConfig: newCfg,
		Steps: []apply.Step{{Name: "virt-api", Objects: []client.Object{wantAPI, wantNew}}},
		Live:  map[apply.ObjectRef]client.Object{apply.RefOf(liveAPI): liveAPI}, Orphans: []client.Object{orphan, withData, named, uncounted},
		Removed: map[string]apply.CRDData{withData.Name: {Objects: 1, Held: "1 Plugins", Named: true},
			named.Name: {Objects: 2, Held: "2 VirtualMachineClones", Retained: true, Recorded: &two, Named: true}},
		Pods: []corev1.Pod{readyPod("virt-api-1", "virt-api", 2*time.Second), readyPod("virt-api-2", "virt-api", 4*time.Second)},
		VMIs: []v1.VirtualMachineInstance{vmi}, Preflight: []v1.PreflightCheck{{Name: "x", State: "Passed", Message: "fine"}}})
	text := p.Text()
	for _, want := range []string{
		"Upgrade KubeVirt v1.8.4 -> v1.9.0", "Changed keys: kubeVirtVersion",
		"Objects: 1 created, 1 updated, 0 recreated, 2 deleted, 2 kept for their data", "Create   1 Deployment",
		"Keep     CustomResourceDefinition plugins.plugin.kubevirt.io", "kept for its data (1 Plugins)",
		"Delete   CustomResourceDefinition virtualmachineclones.clone.kubevirt.io", "deleted with its objects (2 VirtualMachineClones), as kubevirt.io/virt-operator-delete-retained-crds asks",
		"Keep     CustomResourceDefinition virtualmachinesnapshotschedules.snapshot.kubevirt.io", "not counted: kept if it holds user objects",
		"spec.template.spec.containers[0].image: quay.io/kubevirt/virt-api:v1.8.4 -> quay.io/kubevirt/virt-api:v1.9.0",
		"Delete   Deployment kubevirt/virt-gone",
		"1. virt-api: Deployment/virt-api (2 pods)", "virt-api-1 virt-api-2",
		"quay.io/kubevirt/virt-template:v0.2",
		"VMIs, moved by virt-operator: 1 migrate, 0 evicted (restarted), 0 left", "ns/vm",
		"Estimate: 18s", "preflight (image pre-pull)", "install strategy", "the last deployment", "a pod start of 4s, the median of 2 running pods",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the plan lacks %q:\n%s", want, text)
		}
	}
	if p.Blocked() {
		t.Fatal("blocked without a failed check")
	}
	p.Preflight = append(p.Preflight, v1.PreflightCheck{Name: "y", State: "Failed", Message: "no"})
	if !p.Blocked() || !strings.Contains(p.Text(), "FAIL y") {
		t.Fatal("a failed check must block and show")
	}
}

// A step back to an older release is named a rollback, with what it undoes:
// components, stored CRD versions (the exports' v1), RBAC and the VMs' launcher.
func TestMakeRollback(t *testing.T) {
	running := &deployid.Config{Namespace: "kubevirt", Registry: "quay.io/kubevirt", KubeVirtVersion: "v1.9.0"}
	running.ID = running.ComputeID()
	older := &deployid.Config{Namespace: "kubevirt", Registry: "quay.io/kubevirt", KubeVirtVersion: "v1.8.4"}
	older.ID = older.ComputeID()
	exports := func(versions ...string) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
			ObjectMeta: metav1.ObjectMeta{Name: "virtualmachineexports.export.kubevirt.io"}}
		for _, v := range versions {
			c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true})
		}
		return c
	}
	role := func(rule string) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: "kubevirt-controller"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, Resources: []string{rule}}}}
	}
	liveAPI, liveCRD, liveRole := deployment("virt-api", "v1.9.0"), exports("v1beta1", "v1"), role("backups")
	vmi := func(name string, migratable corev1.ConditionStatus) v1.VirtualMachineInstance {
		return v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Status: v1.VirtualMachineInstanceStatus{Phase: v1.VMIRunning, NodeName: "n1", LauncherContainerImageVersion: running.Image(deployid.Launcher),
				Conditions: []v1.VirtualMachineInstanceCondition{{Type: v1.VMIConditionLiveMigratable, Status: migratable}}}}
	}
	p := Make(Input{Current: &v1.KubeVirt{}, NewKubeVirt: &v1.KubeVirt{Spec: v1.KubeVirtSpec{WorkloadUpdates: &v1.WorkloadUpdatePolicy{
		Methods: []v1.WorkloadUpdateMethod{"LiveMigrate"}}}}, CurrentConfig: running, NewConfig: older,
		Steps: []apply.Step{{Name: "crds", Objects: []client.Object{exports("v1alpha1", "v1beta1")}},
			{Name: "rbac", Objects: []client.Object{role("snapshots")}},
			{Name: "virt-api", Objects: []client.Object{deployment("virt-api", "v1.8.4")}}},
		Live: map[apply.ObjectRef]client.Object{apply.RefOf(liveAPI): liveAPI, apply.RefOf(liveCRD): liveCRD, apply.RefOf(liveRole): liveRole},
		Pods: []corev1.Pod{readyPod("virt-api-1", "virt-api", time.Second)},
		VMIs: []v1.VirtualMachineInstance{vmi("a", corev1.ConditionTrue), vmi("b", corev1.ConditionFalse)},
		StoredVersions: []storedversions.Decision{{CRD: "kubevirts.kubevirt.io", Action: storedversions.Keep},
			{CRD: liveCRD.Name, Action: storedversions.Rewrite, Retired: []string{"v1"}, Via: "v1beta1", Objects: 2, Kind: "VirtualMachineExport"}}})
	text := p.Text()
	for _, want := range []string{
		"Roll back KubeVirt v1.9.0 -> v1.8.4", "Rollback: v1.9.0 -> v1.8.4 undoes",
		"Components     1 back to v1.8.4's images: Deployment/virt-api",
		"CRD versions   stored, no longer served: virtualmachineexports.export.kubevirt.io v1 (2 VirtualMachineExports, rewritten as v1beta1)",
		"RBAC           0 roles and bindings created, 1 changed, 0 deleted",
		"VMs            1 move back to v1.8.4's launcher (1 migrate, 0 evicted), 1 stay on v1.9.0's",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the plan lacks %q:\n%s", want, text)
		}
	}
	for _, c := range []struct{ from, to string }{{"v1.8.4", "v1.9.0"}, {"v1.9.0", "v1.9.0"}, {"v1.9.0", "devel"}, {"", "v1.8.4"}} {
		if isRollback(c.from, c.to) {
			t.Errorf("%s -> %s read as a rollback", c.from, c.to)
		}
	}
}
