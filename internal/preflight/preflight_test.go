package preflight

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/release"
	"github.com/virt-operator/virt-operator/internal/storedversions"
)

func TestKubernetes(t *testing.T) {
	rel := &release.Release{Version: "v1.9.0", Kubernetes: release.KubernetesRange{Min: 32, Max: 34}}
	for _, c := range []struct {
		major, minor string
		state, msg   string
	}{
		{"1", "33", Passed, "within 1.32-1.34"},
		{"1", "31", Failed, "supports Kubernetes 1.32 to 1.34; the cluster runs 1.31"},
		{"1", "37+", Passed, "newer than the 1.34"},
		{"2", "0", Failed, "the cluster runs 2.0"},
	} {
		got := KubernetesOf(rel, &version.Info{Major: c.major, Minor: c.minor})
		if got.State != c.state || !strings.Contains(got.Message, c.msg) {
			t.Errorf("%s.%s: %+v, want %s %q", c.major, c.minor, got, c.state, c.msg)
		}
	}
	if got := Kubernetes(&release.Release{}, 1, 1); got.State != Passed {
		t.Errorf("a release without a range: %+v", got)
	}
}

func TestStoredVersions(t *testing.T) {
	rewrite := storedversions.Decision{CRD: "virtualmachineexports.export.kubevirt.io", Action: storedversions.Rewrite, Retired: []string{"v1"}, Via: "v1beta1",
		Objects: 2, Kind: "VirtualMachineExport"}
	retire := storedversions.Decision{CRD: "virtualmachineexports.export.kubevirt.io", Action: storedversions.Retire, Retired: []string{"v1"}}
	refuse := storedversions.Decision{CRD: "things.kubevirt.io", Action: storedversions.Refuse, Retired: []string{"v1alpha3"}, Objects: 3, Kind: "Thing"}
	keep := storedversions.Decision{CRD: "kubevirts.kubevirt.io", Action: storedversions.Keep}
	for _, c := range []struct {
		name      string
		decisions []storedversions.Decision
		state     string
		message   string
	}{
		{"nothing retired", []storedversions.Decision{keep}, Passed, "every stored version stays served"},
		{"no CRD yet", nil, Passed, "every stored version stays served"},
		{"retired, no objects", []storedversions.Decision{keep, retire}, Passed,
			"stored versions the target no longer serves, retired (no objects stored): virtualmachineexports.export.kubevirt.io v1"},
		{"rewritten", []storedversions.Decision{rewrite}, Passed,
			"stored versions the target no longer serves, rewritten in a version both releases serve: virtualmachineexports.export.kubevirt.io v1 (2 VirtualMachineExports, rewritten as v1beta1)"},
		{"no version in common: refused, with the count", []storedversions.Decision{rewrite, refuse}, Failed,
			"stored versions the target no longer serves, with objects stored: things.kubevirt.io v1alpha3 (3 Things; no version both releases serve)"},
	} {
		if got := StoredVersions(c.decisions); got.State != c.state || got.Message != c.message {
			t.Errorf("%s: %+v, want %s %q", c.name, got, c.state, c.message)
		}
	}
}

func TestDeprecated(t *testing.T) {
	rel := &release.Release{Version: "v1.9.0", Gates: map[string]release.GateState{"Snapshot": release.GA, "New": release.Alpha}}
	kv := &v1.KubeVirt{}
	kv.Spec.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{FeatureGates: []string{"Snapshot", "New"}}
	if got := Deprecated(rel, kv); got.State != Passed || !strings.Contains(got.Message, "GA in v1.9.0") || strings.Contains(got.Message, "New") {
		t.Fatalf("%+v", got)
	}
}

func TestVerdictAndSkip(t *testing.T) {
	checks := []v1.PreflightCheck{{Name: CheckKubernetes, State: Passed}, {Name: CheckImages, State: Failed, Message: "no tag"}}
	kv := &v1.KubeVirt{}
	if ok, reason, msg := Verdict(kv, checks); ok || reason != CheckImages || !strings.Contains(msg, SkipAnnotation+"="+CheckImages) {
		t.Fatalf("a failed check: %v %s %q", ok, reason, msg)
	}
	for _, skip := range []string{"ImagePull", " CRDStoredVersions, ImagePull", "all"} {
		kv.Annotations = map[string]string{SkipAnnotation: skip}
		if ok, _, _ := Verdict(kv, checks); !ok {
			t.Errorf("skip %q did not release it", skip)
		}
	}
	kv.Annotations = map[string]string{SkipAnnotation: "ImagePul"} // a typo skips nothing, and is named
	if ok, _, msg := Verdict(kv, checks); ok || !strings.Contains(msg, `names no check "ImagePul"`) {
		t.Errorf("a misspelt check name: %v %q", ok, msg)
	}
	running := []v1.PreflightCheck{{Name: CheckImages, State: Running, Message: "pulling"}}
	if ok, _, msg := Verdict(&v1.KubeVirt{}, running); ok || !strings.Contains(msg, "is running") {
		t.Fatalf("a running check: %v %q", ok, msg)
	}
}

func node(name, arch string, ready bool) corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/arch": arch}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}}}
}

func TestPools(t *testing.T) {
	got := Pools([]corev1.Node{node("b", "amd64", true), node("a", "amd64", true), node("c", "arm64", true), node("d", "s390x", false)})
	if strings.Join(got, ",") != "a,c" {
		t.Fatalf("pools %v: want one Ready node per arch", got)
	}
}

func withStatus(pod *corev1.Pod, states ...corev1.ContainerState) corev1.Pod {
	for i, st := range states {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: pod.Spec.Containers[i].Name, Image: pod.Spec.Containers[i].Image, State: st})
	}
	return *pod
}

func TestImages(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	images := []string{"quay.io/kubevirt/virt-api:v2", "quay.io/kubevirt/virt-launcher:v2"}
	pod := func() *corev1.Pod { return PrepullPod("kubevirt", "0123456789abcdef", "node-0", 0, images) }
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	created := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerError"}} // pulled, no /bin/true
	pulling := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	badTag := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}
	cases := []struct {
		name  string
		pods  []corev1.Pod
		now   time.Time
		state string
		msg   string
	}{
		{"pods not created yet", nil, t0, Running, "pulling on 1"},
		{"still pulling", []corev1.Pod{withStatus(pod(), running, pulling)}, t0, Running, ""},
		{"pulled (a failed start counts)", []corev1.Pod{withStatus(pod(), running, created)}, t0, Passed, "every image pulled on 1"},
		{"a bad tag", []corev1.Pod{withStatus(pod(), running, badTag)}, t0, Failed, "virt-launcher:v2 cannot be pulled on node node-0: ErrImagePull"},
		{"too slow", []corev1.Pod{withStatus(pod(), running, pulling)}, t0.Add(PrepullTimeout + time.Second), Failed, "not pulled within"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Images(c.pods, 1, t0, c.now)
			if got.State != c.state || !strings.Contains(got.Message, c.msg) {
				t.Fatalf("%+v, want %s %q", got, c.state, c.msg)
			}
		})
	}
	p := pod()
	if p.Name != "virt-operator-preflight-0123456789-0" || p.Spec.NodeName != "node-0" || len(p.Spec.Containers) != 2 ||
		p.Labels[PrepullLabel] != PrepullValue || p.Spec.Tolerations[0].Operator != corev1.TolerationOpExists {
		t.Fatalf("pre-pull pod %+v", p)
	}
}

// RemovedCRDs says what becomes of each CRD the target drops, the
// delete-retained annotation read: it acts only on a CRD retained before it
// was named, holding no more objects than then.
func TestRemovedCRDs(t *testing.T) {
	one := 1
	c := RemovedCRDs(map[string]apply.CRDData{
		"virtualmachinetemplates.template.kubevirt.io":         {Objects: 3, Held: "3 VirtualMachineTemplates", Named: true},
		"plugins.plugin.kubevirt.io":                           {},
		"virtualmachinesnapshotschedules.snapshot.kubevirt.io": {Unknown: "forbidden: no"},
		"virtualmachineexports.export.kubevirt.io":             {Objects: 1, Held: "1 VirtualMachineExports", Retained: true, Recorded: &one, Named: true},
		"virtualmachineclones.clone.kubevirt.io":               {Objects: 2, Held: "2 VirtualMachineClones", Retained: true, Recorded: &one, Named: true},
	})
	want := []string{"plugins.plugin.kubevirt.io deleted (no objects)",
		"virtualmachineclones.clone.kubevirt.io kept for its data (2 VirtualMachineClones): it held 1 when it was kept",
		"virtualmachineexports.export.kubevirt.io deleted with its objects (1 VirtualMachineExports), as kubevirt.io/virt-operator-delete-retained-crds asks",
		"virtualmachinesnapshotschedules.snapshot.kubevirt.io kept: its objects cannot be counted (forbidden: no)",
		"virtualmachinetemplates.template.kubevirt.io kept for its data (3 VirtualMachineTemplates)"}
	parts := strings.Split(c.Message, "; ")
	if c.State != Passed || len(parts) < len(want) {
		t.Fatalf("%+v, want Passed: %q", c, want)
	}
	for _, w := range want {
		found := false
		for _, p := range parts {
			found = found || strings.HasPrefix(p, w)
		}
		if !found {
			t.Errorf("%q does not say %q", c.Message, w)
		}
	}
	if c := RemovedCRDs(nil); c.Message != "none" {
		t.Fatalf("nothing removed: %+v", c)
	}
}

// CountableCRDs names the target's CRDs the operator may not list, with the
// rule to add; it never blocks.
func TestCountableCRDs(t *testing.T) {
	c := CountableCRDs([]string{"virtualmachinesnapshotschedules.snapshot.kubevirt.io"}, nil)
	if c.State != Passed || !strings.Contains(c.Message, "virtualmachinesnapshotschedules.snapshot.kubevirt.io (list on resource virtualmachinesnapshotschedules in API group snapshot.kubevirt.io)") ||
		!strings.Contains(c.Message, "BlockUninstallIfWorkloadsExist is refused") {
		t.Errorf("%+v", c)
	}
	if c := CountableCRDs(nil, nil); c.State != Passed || !strings.Contains(c.Message, "every CRD") {
		t.Errorf("all listable: %+v", c)
	}
	if c := CountableCRDs(nil, errors.New("forbidden")); c.State != Passed || c.Message != "not checked: forbidden" {
		t.Errorf("not asked: %+v", c)
	}
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{SkipAnnotation: CheckCountable}}}
	if ok, _, msg := Verdict(kv, []v1.PreflightCheck{{Name: CheckKubernetes, State: Failed}}); ok || strings.Contains(msg, "names no check") {
		t.Errorf("%s is a check the skip annotation may name: %s", CheckCountable, msg)
	}
}
