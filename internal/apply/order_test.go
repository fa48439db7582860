package apply

import (
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

func TestChoosePath(t *testing.T) {
	tests := []struct {
		target, observed string
		want             Path
	}{
		{"v0.15.0", "v0.14.0", Upgrade},
		{"v0.14.0", "v0.15.0", Install}, // rollback
		{"v0.15.0", "v0.15.0", Install}, // config-only change
		{"devel", "v0.14.0", Upgrade},
		{"devel", "", Install},
		{"v0.15.0", "devel", Upgrade},
		{"v1.7.0", "v1.7.0-rc.1", Upgrade},
		{"v1.7.0-rc.1", "v1.7.0", Install},
	}
	for _, tt := range tests {
		for _, strip := range []bool{false, true} {
			target, observed := tt.target, tt.observed
			if strip {
				target, observed = trimV(target), trimV(observed)
			}
			if got := ChoosePath(target, observed); got != tt.want {
				t.Errorf("ChoosePath(%q, %q) = %v, want %v", target, observed, got, tt.want)
			}
		}
	}
}

func trimV(s string) string {
	if len(s) > 0 && s[0] == 'v' {
		return s[1:]
	}
	return s
}

func stepSummary(steps []Step) map[string][]string {
	out := map[string][]string{}
	for _, s := range steps {
		for _, o := range s.Objects {
			out[s.Name] = append(out[s.Name], kindOf(o)+"/"+o.GetName())
		}
	}
	return out
}

func stepNames(steps []Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Name)
	}
	return out
}

func TestSteps(t *testing.T) {
	s := testStrategy(t)
	wantObjects := map[string][]string{
		StepPrerequisites: {"ServiceAccount/kubevirt-apiserver", "ClusterRole/kubevirt-apiserver",
			"ClusterRoleBinding/kubevirt-apiserver", "Service/virt-api", "ConfigMap/kubevirt-ca"},
		StepVirtAPI: {"Deployment/virt-api", "PodDisruptionBudget/virt-api-pdb"},
		StepControllers: {"Deployment/virt-controller", "PodDisruptionBudget/virt-controller-pdb", "Deployment/virt-exportproxy",
			"Deployment/virt-synchronization-controller", "PodDisruptionBudget/virt-synchronization-controller-pdb",
			"Deployment/virt-template-controller", "PodDisruptionBudget/virt-template-controller-pdb"},
		StepVirtHandler: {"DaemonSet/virt-handler"},
	}
	for path, wantOrder := range map[Path][]string{
		Install: {StepPrerequisites, StepVirtAPI, StepControllers, StepVirtHandler},
		Upgrade: {StepPrerequisites, StepVirtHandler, StepControllers, StepVirtAPI},
	} {
		steps := Steps(s, path)
		if got := stepNames(steps); !reflect.DeepEqual(got, wantOrder) {
			t.Errorf("%v: steps %v, want %v", path, got, wantOrder)
		}
		if got := stepSummary(steps); !reflect.DeepEqual(got, wantObjects) {
			t.Errorf("%v: objects\n%v\nwant\n%v", path, got, wantObjects)
		}
		if n := len(Refs(steps)); n != len(s.Objects())+4 {
			t.Errorf("%v: %d refs, want every object and 4 PDBs", path, n)
		}
	}
	if got := stepNames(Steps(&strategy.Strategy{}, Install)); len(got) != 0 {
		t.Errorf("empty strategy has steps %v", got)
	}
}

func TestPodDisruptionBudgets(t *testing.T) {
	d := deployment("virt-api", 2)
	d.Labels[metadata.ManagedByLabel] = metadata.ManagedByValue
	d.Annotations = map[string]string{metadata.InstallStrategyIdentifierAnnotation: "id", "other": "x"}
	nilReplicas := deployment("nil", 1)
	nilReplicas.Spec.Replicas = nil
	pdbs := PodDisruptionBudgets([]*appsv1.Deployment{d, deployment("one", 1), nilReplicas, deployment("three", 3)})
	if len(pdbs) != 2 || pdbs[0].Name != "virt-api-pdb" || pdbs[1].Name != "three-pdb" {
		t.Fatalf("PDBs %v", pdbs)
	}
	p := pdbs[0]
	if p.Namespace != ns || p.Spec.MinAvailable.IntValue() != 1 || !reflect.DeepEqual(p.Spec.Selector, d.Spec.Selector) {
		t.Errorf("spec %+v", p.Spec)
	}
	if got := pdbs[1].Spec.MinAvailable.IntValue(); got != 2 {
		t.Errorf("3 replicas: minAvailable %d, want 2 (upstream's replicas-1: one eviction at a time)", got)
	}
	if p.Labels[metadata.AppLabel] != "virt-api-pdb" || !metadata.IsManaged(p) || d.Labels[metadata.AppLabel] != "virt-api" {
		t.Errorf("labels %v (deployment's %v)", p.Labels, d.Labels)
	}
	if !reflect.DeepEqual(p.Annotations, map[string]string{metadata.InstallStrategyIdentifierAnnotation: "id"}) {
		t.Errorf("annotations %v", p.Annotations)
	}
	p.Spec.Selector.MatchLabels["x"] = "y"
	if d.Spec.Selector.MatchLabels["x"] != "" {
		t.Error("the PDB shares the Deployment's selector")
	}
}

// A PodDisruptionBudget's labels are upstream's: its own kubevirt.io, the
// operator's, and the product's; not the Deployment's name or release version.
func TestPodDisruptionBudgetLabelsAreUpstreams(t *testing.T) {
	tests := []struct {
		name string
		spec func(*v1.KubeVirtSpec)
		want map[string]string
	}{
		{"no product", nil, map[string]string{metadata.AppLabel: "virt-api-pdb", metadata.ManagedByLabel: metadata.ManagedByValue,
			metadata.AppComponentLabel: metadata.DefaultAppComponent}},
		{"product", func(s *v1.KubeVirtSpec) { s.ProductName, s.ProductVersion, s.ProductComponent = "acme", "2.0", "virt" },
			map[string]string{metadata.AppLabel: "virt-api-pdb", metadata.ManagedByLabel: metadata.ManagedByValue,
				metadata.AppComponentLabel: "virt", metadata.AppPartOfLabel: "acme", metadata.AppVersionLabel: "2.0"}},
	}
	for _, tt := range tests {
		cfg := testConfig(t, tt.spec)
		d := deployment(VirtAPI, 2)
		d.Labels[metadata.AppNameLabel], d.Labels[metadata.AppVersionLabel] = VirtAPI, cfg.KubeVirtVersion
		metadata.Inject(d, cfg)
		if got := PodDisruptionBudgets([]*appsv1.Deployment{d})[0].Labels; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: labels %v, want %v", tt.name, got, tt.want)
		}
	}
}

var target = metadata.Target{Version: "v1", Registry: "r", ID: "id"}

func rolledDeployment(edit func(*appsv1.Deployment)) *appsv1.Deployment {
	d := deployment("virt-api", 2)
	ann := map[string]string{metadata.InstallStrategyVersionAnnotation: "v1", metadata.InstallStrategyRegistryAnnotation: "r", metadata.InstallStrategyIdentifierAnnotation: "id"}
	d.Annotations, d.Spec.Template.Annotations = ann, ann
	d.Generation = 3
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	if edit != nil {
		edit(d)
	}
	return d
}

func TestDeploymentRolledOver(t *testing.T) {
	tests := []struct {
		name string
		edit func(*appsv1.Deployment)
		want bool
	}{
		{"rolled over", nil, true},
		{"generation not observed", func(d *appsv1.Deployment) { d.Status.ObservedGeneration = 2 }, false},
		{"one replica not updated", func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 1 }, false},
		{"one replica not ready", func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 1 }, false},
		{"an old replica left", func(d *appsv1.Deployment) { d.Status.Replicas = 3 }, false},
		{"the object's stamps are not its pods'", func(d *appsv1.Deployment) { d.Annotations = map[string]string{} }, true},
		{"pod template of another target", func(d *appsv1.Deployment) { d.Spec.Template.Annotations = nil }, false},
		{"nil replicas means 1", func(d *appsv1.Deployment) {
			d.Spec.Replicas = nil
			d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas = 1, 1, 1
		}, true},
	}
	for _, tt := range tests {
		if got := DeploymentRolledOver(rolledDeployment(tt.edit), target); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if DeploymentRolledOver(nil, target) {
		t.Error("nil is rolled over")
	}
}

func TestDaemonSetRolledOver(t *testing.T) {
	base := func(edit func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
		ds := daemonSet(VirtHandler)
		ann := map[string]string{metadata.InstallStrategyVersionAnnotation: "v1", metadata.InstallStrategyRegistryAnnotation: "r", metadata.InstallStrategyIdentifierAnnotation: "id"}
		ds.Annotations, ds.Spec.Template.Annotations = ann, ann
		ds.Generation = 2
		ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberReady: 3, NumberAvailable: 3}
		if edit != nil {
			edit(ds)
		}
		return ds
	}
	tests := []struct {
		name string
		edit func(*appsv1.DaemonSet)
		want bool
	}{
		{"rolled over", nil, true},
		{"generation not observed", func(d *appsv1.DaemonSet) { d.Status.ObservedGeneration = 1 }, false},
		{"a node not updated", func(d *appsv1.DaemonSet) { d.Status.UpdatedNumberScheduled = 2 }, false},
		{"a pod not ready", func(d *appsv1.DaemonSet) { d.Status.NumberReady = 2 }, false},
		{"a pod unavailable", func(d *appsv1.DaemonSet) { d.Status.NumberUnavailable = 1 }, false},
		{"scheduled nowhere", func(d *appsv1.DaemonSet) { d.Status = appsv1.DaemonSetStatus{ObservedGeneration: 2} }, false},
		{"other target", func(d *appsv1.DaemonSet) { d.Annotations[metadata.InstallStrategyVersionAnnotation] = "v0" }, false},
	}
	for _, tt := range tests {
		if got := DaemonSetRolledOver(base(tt.edit), target); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestStepRolledOver(t *testing.T) {
	desired := rolledDeployment(func(d *appsv1.Deployment) { d.Status = appsv1.DeploymentStatus{} })
	pdb := PodDisruptionBudgets([]*appsv1.Deployment{desired})[0]
	step := Step{Name: StepVirtAPI, Objects: []client.Object{desired, pdb}}
	hash, _ := Hash(desired)
	live := func(hashValue string) map[ObjectRef]client.Object {
		l := rolledDeployment(nil)
		l.Annotations = map[string]string{DesiredHashAnnotation: hashValue}
		for k, v := range desired.Annotations {
			l.Annotations[k] = v
		}
		return map[ObjectRef]client.Object{RefOf(l): l}
	}
	if !step.RolledOver(live(hash)) {
		t.Error("a rolled-over step with its desired hash is not done")
	}
	if step.RolledOver(live("stale")) {
		t.Error("a step whose Deployment awaits a write is done")
	}
	if step.RolledOver(map[ObjectRef]client.Object{}) {
		t.Error("a step whose Deployment is absent is done")
	}
	if !(Step{Objects: []client.Object{&policyv1.PodDisruptionBudget{}}}).RolledOver(nil) {
		t.Error("a step without workloads is not done")
	}
	if d, _ := step.Workloads(); len(d) != 1 {
		t.Errorf("workloads %v", d)
	}
}

// Certificates are written in trust order: the CA Secrets, then the CA
// bundles and the webhooks and APIServices carrying them, then the leaves.
func TestPrerequisitesWriteCertificatesInTrustOrder(t *testing.T) {
	s := &strategy.Strategy{}
	secret := func(name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	}
	for _, o := range []client.Object{
		secret("kubevirt-virt-api-certs"), secret("kubevirt-ca"), secret("kubevirt-export-ca"), configMap("kubevirt-ca"),
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "virt-api-validator"}},
		&apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.subresources.kubevirt.io"}},
	} {
		if err := s.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, o := range Steps(s, Upgrade)[0].Objects {
		got = append(got, RefOf(o).Kind+"/"+o.GetName())
	}
	want := []string{"Secret/kubevirt-ca", "Secret/kubevirt-export-ca", "ConfigMap/kubevirt-ca",
		"ValidatingWebhookConfiguration/virt-api-validator", "APIService/v1.subresources.kubevirt.io", "Secret/kubevirt-virt-api-certs"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("prerequisites %v, want %v", got, want)
	}
	// The two runs of Secrets stay two runs when written.
	var runs []string
	for _, g := range groupByKind(Plan(Steps(s, Upgrade)[0].Objects, nil, nil)) {
		runs = append(runs, RefOf(g[0].Object).Kind)
	}
	if want := []string{"Secret", "ConfigMap", "ValidatingWebhookConfiguration", "APIService", "Secret"}; !reflect.DeepEqual(runs, want) {
		t.Fatalf("write runs %v, want %v", runs, want)
	}
}

// A node that is not Ready may hold its old, unready pod: the rollout it was
// left out of still counts as rolled over, but only for that many pods.
func TestDaemonSetRolledOverExceptLeftOutNodes(t *testing.T) {
	ann := map[string]string{metadata.InstallStrategyVersionAnnotation: "v1", metadata.InstallStrategyRegistryAnnotation: "r", metadata.InstallStrategyIdentifierAnnotation: "id"}
	ds := daemonSet(VirtHandler)
	ds.Annotations, ds.Spec.Template.Annotations, ds.Generation = ann, ann, 2
	ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: 2, DesiredNumberScheduled: 20, UpdatedNumberScheduled: 19, NumberReady: 19, NumberUnavailable: 1}
	if DaemonSetRolledOverExcept(ds, target, 0) || !DaemonSetRolledOverExcept(ds, target, 1) {
		t.Fatal("want rolled over with the one left-out node allowed, not without")
	}
	ds.Status.NumberReady, ds.Status.NumberUnavailable = 18, 2
	if DaemonSetRolledOverExcept(ds, target, 1) {
		t.Fatal("a second unready pod on a Ready node must hold the rollout")
	}
}
