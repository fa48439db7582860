// Package helm's test checks charts/virt-operator with the Helm this module pins
// (the binary in $HELM, which make chart-check builds; else built here): helm lint,
// and helm template object by object against kustomize's build of config/default
// (and config/prometheus with monitoring on), with the default values, with
// every value changed and without the NetworkPolicy, and the values schema
// refusing bad values by name.
package helm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// root is the repository's root, three levels up from this module.
var root = func() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return filepath.Clean(filepath.Join(wd, "..", "..", ".."))
}()

var chartDir = filepath.Join(root, "charts", "virt-operator")

const (
	defaultNamespace = "kubevirt"
	keepPolicy       = "helm.sh/resource-policy"
	managedBy        = "app.kubernetes.io/managed-by"
)

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helmBinary is $HELM, or helm built from this module into a temporary directory.
func helmBinary(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		if p := os.Getenv("HELM"); p != "" {
			helmPath = p
			return
		}
		dir, err := os.MkdirTemp("", "chart-test-helm-")
		if err != nil {
			helmErr = err
			return
		}
		helmPath = filepath.Join(dir, "helm")
		out, err := exec.Command("go", "build", "-o", helmPath, "helm.sh/helm/v4/cmd/helm").CombinedOutput()
		if err != nil {
			helmErr = fmt.Errorf("building helm: %v\n%s", err, out)
		}
	})
	if helmErr != nil {
		t.Fatal(helmErr)
	}
	return helmPath
}

// helm runs the helm binary; it returns stdout, and stderr as the error's text.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// object is one rendered object, numbers as JSON decodes them.
type object = map[string]any

func key(o object) string {
	m, _ := o["metadata"].(map[string]any)
	return fmt.Sprintf("%s %s %v/%v", o["apiVersion"], o["kind"], m["namespace"], m["name"])
}

// render is helm template of the chart with args, by object key.
func render(t *testing.T, args ...string) map[string]object {
	t.Helper()
	out, err := helm(t, append([]string{"template", "virt-operator", chartDir}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]object{}
	for _, doc := range strings.Split(out, "\n---") {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("helm template output: %v\n%s", err, doc)
		}
		if len(o) == 0 {
			continue
		}
		k := key(o)
		if _, dup := objs[k]; dup {
			t.Fatalf("helm template renders %s twice", k)
		}
		objs[k] = o
	}
	return objs
}

// kustomize is kustomize's build of config/<dir>, by object key.
func kustomize(t *testing.T, dirs ...string) map[string]object {
	t.Helper()
	objs := map[string]object{}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	for _, dir := range dirs {
		res, err := k.Run(filesys.MakeFsOnDisk(), filepath.Join(root, "config", dir))
		if err != nil {
			t.Fatalf("kustomize build config/%s: %v", dir, err)
		}
		for _, r := range res.Resources() {
			m, err := r.Map()
			if err != nil {
				t.Fatal(err)
			}
			o := normalize(t, m)
			objs[key(o)] = o
		}
	}
	return objs
}

// normalize round-trips v through JSON, so both sides hold the same types.
func normalize(t *testing.T, v any) object {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// helmMarks removes the marks the chart adds to config/'s objects, checking
// each: the keep policy on the CRD, the namespace and the PriorityClass, and
// managed-by Helm where config/ says kustomize.
func helmMarks(t *testing.T, objs map[string]object) {
	t.Helper()
	for k, o := range objs {
		m := o["metadata"].(map[string]any)
		ann, _ := m["annotations"].(map[string]any)
		switch o["kind"] {
		case "CustomResourceDefinition", "Namespace", "PriorityClass":
			if ann[keepPolicy] != "keep" {
				t.Errorf("%s: no %s: keep: helm uninstall would delete it", k, keepPolicy)
			}
			delete(ann, keepPolicy)
			if len(ann) == 0 {
				delete(m, "annotations")
			}
		}
		if labels, _ := m["labels"].(map[string]any); labels[managedBy] != nil {
			if labels[managedBy] != "Helm" {
				t.Errorf("%s: %s is %v, want Helm", k, managedBy, labels[managedBy])
			}
			labels[managedBy] = "kustomize"
		}
	}
}

// same fails the test with every difference between want and got.
func same(t *testing.T, want, got map[string]object) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("the chart renders %s, which config/ does not have", k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		g, ok := got[k]
		if !ok {
			t.Errorf("the chart does not render %s", k)
			continue
		}
		for _, d := range diff("", want[k], g) {
			t.Errorf("%s: %s", k, d)
		}
	}
}

// diff lists the paths at which a and b differ.
func diff(at string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		var out []string
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			out = append(out, diff(at+"."+k, am[k], bm[k])...)
		}
		return out
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		var out []string
		for i := range al {
			out = append(out, diff(fmt.Sprintf("%s[%d]", at, i), al[i], bl[i])...)
		}
		return out
	}
	if reflect.DeepEqual(a, b) {
		return nil
	}
	aj, _ := json.Marshal(a)
	bj, _ := json.Marshal(b)
	return []string{fmt.Sprintf("%s: config/ has %s, the chart %s", at, trim(aj), trim(bj))}
}

func trim(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

func TestLint(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"--set", "monitoring.enabled=true"},
		{"--set", "namespace.name=kv2,namespace.create=false,replicas=1,priorityClassName="},
		{"--set", "networkPolicy.enabled=false"},
		{"--set", "networkPolicy.webhooks.from[0].ipBlock.cidr=192.0.2.0/28"},
	} {
		out, err := helm(t, append([]string{"lint", "--strict", chartDir}, args...)...)
		if err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

// The default values render exactly config/default, objects and fields, but for
// Helm's marks.
func TestDefaultsAreConfigDefault(t *testing.T) {
	got := render(t)
	helmMarks(t, got)
	same(t, kustomize(t, "default"), got)
}

// monitoring.enabled adds config/prometheus, as is; its values change the
// ServiceMonitor's labels and Prometheus' account.
func TestMonitoring(t *testing.T) {
	got := render(t, "--set", "monitoring.enabled=true")
	helmMarks(t, got)
	same(t, kustomize(t, "default", "prometheus"), got)

	got = render(t, "--set", "monitoring.enabled=true,monitoring.serviceMonitor.labels.release=kps",
		"--set", "monitoring.prometheus.serviceAccount.name=kps-prometheus,monitoring.prometheus.serviceAccount.namespace=observability")
	helmMarks(t, got)
	want := kustomize(t, "default", "prometheus")
	for _, o := range want {
		m := o["metadata"].(map[string]any)
		switch {
		case o["kind"] == "ServiceMonitor":
			m["labels"].(map[string]any)["release"] = "kps"
		case o["kind"] == "ClusterRoleBinding" && m["name"] == "virt-operator-metrics-reader":
			s := o["subjects"].([]any)[0].(map[string]any)
			s["name"], s["namespace"] = "kps-prometheus", "observability"
		}
	}
	same(t, want, got)
}

// Every value changed: the objects are config/default's with exactly those
// changes, the namespace followed everywhere but in kube-system.
func TestValues(t *testing.T) {
	values := `
namespace: {name: kv2, create: false}
image: {repository: registry.example:5000/me/virt-operator, tag: v2.0.1, pullPolicy: Always}
replicas: 3
resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: "1", memory: 1Gi}}
nodeSelector: {node-role.kubernetes.io/control-plane: ""}
tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}]
affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {kubevirt.io: virt-operator}}}}]}}
priorityClassName: ""
networkPolicy:
  enabled: true
  webhooks: {from: [{ipBlock: {cidr: 192.0.2.0/28}}]}
  metrics: {from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: observability}}, podSelector: {matchLabels: {app: prometheus}}}]}
`
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal([]byte(values), &v); err != nil {
		t.Fatal(err)
	}
	v = normalize(t, v)
	got := render(t, "-f", file)
	helmMarks(t, got)

	want := map[string]object{}
	for _, o := range kustomize(t, "default") {
		if o["kind"] == "Namespace" {
			continue // namespace.create=false
		}
		m := o["metadata"].(map[string]any)
		if m["namespace"] == defaultNamespace {
			m["namespace"] = "kv2"
		}
		subjects, _ := o["subjects"].([]any)
		for _, s := range subjects {
			if s := s.(map[string]any); s["namespace"] == defaultNamespace {
				s["namespace"] = "kv2"
			}
		}
		if o["kind"] == "NetworkPolicy" {
			np := v["networkPolicy"].(map[string]any)
			rules := o["spec"].(map[string]any)["ingress"].([]any)
			rules[0].(map[string]any)["from"] = np["webhooks"].(map[string]any)["from"]
			rules[1].(map[string]any)["from"] = np["metrics"].(map[string]any)["from"]
		}
		if o["kind"] == "Deployment" {
			spec := o["spec"].(map[string]any)
			spec["replicas"] = v["replicas"]
			pod := spec["template"].(map[string]any)["spec"].(map[string]any)
			delete(pod, "priorityClassName")
			for _, k := range []string{"nodeSelector", "tolerations", "affinity"} {
				pod[k] = v[k]
			}
			c := pod["containers"].([]any)[0].(map[string]any)
			image := "registry.example:5000/me/virt-operator:v2.0.1"
			c["image"], c["imagePullPolicy"], c["resources"] = image, "Always", v["resources"]
			for _, e := range c["env"].([]any) {
				if e := e.(map[string]any); e["name"] == "VIRT_OPERATOR_IMAGE" {
					e["value"] = image
				}
			}
		}
		want[key(o)] = o
	}
	same(t, want, got)

	// The kube-system objects stay there; everything else namespaced moved.
	inKubeSystem := 0
	for k, o := range got {
		switch o["metadata"].(map[string]any)["namespace"] {
		case "kube-system":
			inKubeSystem++
		case nil, "kv2":
		default:
			t.Errorf("%s: not in kv2", k)
		}
	}
	if inKubeSystem != 2 {
		t.Errorf("%d objects in kube-system, want the Role and the RoleBinding", inKubeSystem)
	}
}

// networkPolicy.enabled=false leaves the NetworkPolicy out; an empty list of
// sources admits the port from every source.
func TestNetworkPolicyValues(t *testing.T) {
	got := render(t, "--set", "networkPolicy.enabled=false")
	helmMarks(t, got)
	want := kustomize(t, "default")
	for k, o := range want {
		if o["kind"] == "NetworkPolicy" {
			delete(want, k)
		}
	}
	same(t, want, got)

	got = render(t, "--set-json", `networkPolicy.metrics.from=[]`)
	helmMarks(t, got)
	want = kustomize(t, "default")
	for _, o := range want {
		if o["kind"] == "NetworkPolicy" {
			delete(o["spec"].(map[string]any)["ingress"].([]any)[1].(map[string]any), "from")
		}
	}
	same(t, want, got)
}

// The schema refuses bad values before anything is rendered, naming the value.
func TestSchemaRefusesBadValues(t *testing.T) {
	for _, c := range []struct {
		set, want string
	}{
		{"replicas=-1", "/replicas"},
		{"replicas=two", "/replicas"},
		{"namespace.name=Not_A_Label", "/namespace/name"},
		{"namespace.name=" + strings.Repeat("n", 64), "/namespace/name"},
		{"image.pullPolicy=Sometimes", "/image/pullPolicy"},
		{"image.repository=ghcr.io/x/virt-operator:v1", "/image/repository"},
		{"monitoring.enabled=yes please", "/monitoring/enabled"},
		{"replica=1", "replica"},
		{"nodeSelector.zone=1", "/nodeSelector/zone"},
		{"networkPolicy.enabled=maybe", "/networkPolicy/enabled"},
		{"networkPolicy.webhooks.from[0].ipBlock.except[0]=10.0.0.0/8", "/networkPolicy/webhooks/from/0/ipBlock"},
		{"networkPolicy.metrics.from[0].namespace=monitoring", "/networkPolicy/metrics/from/0"},
	} {
		_, err := helm(t, "template", "virt-operator", chartDir, "--set", c.set)
		switch {
		case err == nil:
			t.Errorf("--set %s: rendered, want refused", c.set)
		case !strings.Contains(err.Error(), "schema") || !strings.Contains(err.Error(), c.want):
			t.Errorf("--set %s: %v; want a schema error naming %s", c.set, err, c.want)
		}
	}
}
