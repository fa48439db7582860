// Package helm_test installs charts/virt-operator on a sandbox with the helm
// binary the repository pins (hack/tools/helm), as an admin would: bad values
// refused, an install in a namespace of its own reaching Available, the operator
// installing KubeVirt with the chart's RBAC, an upgrade to a new image, and an
// uninstall that keeps what KubeVirt needs.
package helm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/operator"
	"github.com/virt-operator/virt-operator/internal/sandbox"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
)

// HelmEnv names the helm binary to run (make test-e2e sets it to the one make
// builds from hack/tools/helm); without it the test builds that one itself.
const HelmEnv = "VIRT_OPERATOR_TEST_HELM"

const (
	release    = "virt-operator"
	namespace  = "kv-helm" // not config/'s kubevirt: the namespace value must reach every object
	repository = "ghcr.io/virt-operator/virt-operator"
	crdName    = "kubevirts.kubevirt.io"
	// The release the in-process operator installs: a builtin one, no Job needed.
	kubevirtImage = "quay.io/kubevirt/virt-operator:v1.8.4"
)

func init() { ctrllog.SetLogger(logr.Discard()) }

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helmBinary is $VIRT_OPERATOR_TEST_HELM, or helm built from hack/tools/helm into
// <repo>/.cache/test-bin (seconds once Go's build cache has it, minutes before).
func helmBinary(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		if p := os.Getenv(HelmEnv); p != "" {
			if st, err := os.Stat(p); err != nil || st.Mode().Perm()&0o111 == 0 {
				helmErr = fmt.Errorf("$%s=%s is not an executable file (make test-e2e builds it): %v", HelmEnv, p, err)
			}
			helmPath = p
			return
		}
		root := sandboxtest.RepoRoot()
		dir := filepath.Join(root, ".cache", "test-bin")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			helmErr = err
			return
		}
		tmp, err := os.MkdirTemp(dir, "build-")
		if err != nil {
			helmErr = err
			return
		}
		defer func() { _ = os.RemoveAll(tmp) }()
		cmd := exec.Command("go", "build", "-o", filepath.Join(tmp, "helm"), "helm.sh/helm/v4/cmd/helm")
		cmd.Dir = filepath.Join(root, "hack", "tools", "helm")
		if out, err := cmd.CombinedOutput(); err != nil {
			helmErr = fmt.Errorf("building helm (or set $%s): %v\n%s", HelmEnv, err, out)
			return
		}
		helmPath = filepath.Join(dir, "helm")
		helmErr = os.Rename(filepath.Join(tmp, "helm"), helmPath)
	})
	if helmErr != nil {
		t.Fatal(helmErr)
	}
	return helmPath
}

// cluster is a sandbox and helm pointed at it.
type cluster struct {
	t          *testing.T
	sb         *sandbox.Sandbox
	c          client.Client
	helm, home string
	chart      string
}

// run runs helm against the sandbox; stderr is the error's text.
func (k *cluster) run(args ...string) (string, error) {
	k.t.Helper()
	start := time.Now()
	cmd := exec.Command(k.helm, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+k.sb.Kubeconfig(),
		"HELM_CACHE_HOME="+filepath.Join(k.home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(k.home, "config"), "HELM_DATA_HOME="+filepath.Join(k.home, "data"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	k.t.Logf("helm %s: %s", strings.Join(args, " "), time.Since(start).Round(10*time.Millisecond))
	if err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func (k *cluster) mustRun(args ...string) string {
	k.t.Helper()
	out, err := k.run(args...)
	if err != nil {
		k.t.Fatal(err)
	}
	return out
}

func (k *cluster) get(obj client.Object, ns, name string) error {
	return k.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
}

// waitAvailable waits for the operator's Deployment to have rolled out to image:
// every replica updated, Available, and its pods on the image (the sandbox's kwok
// runs them).
func (k *cluster) waitAvailable(image string, replicas int32) {
	k.t.Helper()
	start := time.Now()
	sandboxtest.Eventually(k.t, 2*time.Minute, "the operator's Deployment Available on "+image, func() (bool, error) {
		d := &appsv1.Deployment{}
		if err := k.get(d, namespace, "virt-operator"); err != nil {
			return false, err
		}
		available := false
		for _, c := range d.Status.Conditions {
			available = available || c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue
		}
		st := d.Status
		if !available || st.ObservedGeneration != d.Generation || st.UpdatedReplicas != replicas ||
			st.AvailableReplicas != replicas || st.Replicas != replicas {
			return false, fmt.Errorf("status %+v", st)
		}
		pods := &corev1.PodList{}
		if err := k.c.List(context.Background(), pods, client.InNamespace(namespace), client.MatchingLabels{"kubevirt.io": "virt-operator"}); err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Spec.Containers[0].Image != image {
				return false, fmt.Errorf("pod %s runs %s", p.Name, p.Spec.Containers[0].Image)
			}
		}
		return true, nil
	})
	k.t.Logf("Deployment Available on %s after %s", image, time.Since(start).Round(100*time.Millisecond))
}

// deploymentImages are the container's image and its VIRT_OPERATOR_IMAGE.
func deploymentImages(d *appsv1.Deployment) (image, env string) {
	c := d.Spec.Template.Spec.Containers[0]
	for _, e := range c.Env {
		if e.Name == "VIRT_OPERATOR_IMAGE" {
			env = e.Value
		}
	}
	return c.Image, env
}

// createCRD creates the CRD of file and waits for it to be Established.
func createCRD(t *testing.T, c client.Client, file string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if err := c.Create(context.Background(), crd); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Eventually(t, time.Minute, "CRD "+crd.Name+" Established", func() (bool, error) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(crd), crd); err != nil {
			return false, err
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

func TestInstallUpgradeUninstall(t *testing.T) {
	t.Parallel()
	helmBin := helmBinary(t)
	// No CRD beforehand: the chart installs the KubeVirt CRD.
	sb := sandboxtest.Start(t, 2, sandboxtest.WithHostExec(t), func(o *sandbox.Options) { o.CRDDir = "" })
	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(sb.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	k := &cluster{t: t, sb: sb, c: c, helm: helmBin, home: t.TempDir(), chart: filepath.Join(sandboxtest.RepoRoot(), "charts", "virt-operator")}
	ctx := context.Background()

	// Bad values are refused by the schema, by name, before anything is created.
	for _, bad := range []struct{ set, want string }{
		{"replicas=-1", "/replicas"},
		{"namespace.name=KubeVirt_Helm", "/namespace/name"},
		{"image.pullPolicy=Sometimes", "/image/pullPolicy"},
	} {
		_, err := k.run("install", release, k.chart, "--namespace", namespace, "--create-namespace", "--set", bad.set)
		if err == nil || !strings.Contains(err.Error(), "schema") || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("helm install --set %s: %v; want a schema error naming %s", bad.set, err, bad.want)
		}
	}
	if _, err := k.run("status", release, "--namespace", namespace); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("after refused installs, helm status: %v; want release not found", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := k.get(crd, "", crdName); !apierrors.IsNotFound(err) {
		t.Fatalf("after refused installs, the CRD: %v; want not found", err)
	}
	if err := k.get(&corev1.Namespace{}, "", namespace); !apierrors.IsNotFound(err) {
		t.Fatalf("after refused installs, namespace %s: %v; want not found", namespace, err)
	}

	// Install as docs/user/helm.md says: the release in the operator's namespace,
	// which helm creates and the chart's Namespace (its pod security label) takes over.
	v1Image := repository + ":v0.1.0"
	k.mustRun("install", release, k.chart, "--namespace", namespace, "--create-namespace", "--wait", "--timeout", "2m",
		"--set", "namespace.name="+namespace, "--set-string", "image.tag=v0.1.0")
	k.waitAvailable(v1Image, 2)
	if err := k.get(crd, "", crdName); err != nil {
		t.Fatal(err)
	}
	established := false
	for _, cond := range crd.Status.Conditions {
		established = established || cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue
	}
	if !established {
		t.Errorf("CRD %s not Established: %+v", crdName, crd.Status.Conditions)
	}
	ns := &corev1.Namespace{}
	if err := k.get(ns, "", namespace); err != nil {
		t.Fatal(err)
	}
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "privileged" {
		t.Errorf("namespace %s labels %v: want pod security privileged", namespace, ns.Labels)
	}
	d := &appsv1.Deployment{}
	if err := k.get(d, namespace, "virt-operator"); err != nil {
		t.Fatal(err)
	}
	if image, env := deploymentImages(d); image != v1Image || env != v1Image {
		t.Errorf("Deployment image %s, VIRT_OPERATOR_IMAGE %s; want %s", image, env, v1Image)
	}
	// The kube-system RoleBinding binds the ServiceAccount of the chart's namespace.
	rb := &rbacv1.RoleBinding{}
	if err := k.get(rb, "kube-system", "virt-operator"); err != nil {
		t.Fatal(err)
	}
	if s := rb.Subjects[0]; s.Namespace != namespace || s.Name != "virt-operator" {
		t.Errorf("kube-system RoleBinding subject %+v, want ServiceAccount %s/virt-operator", s, namespace)
	}

	// The operator, run here as the chart's ServiceAccount, installs KubeVirt in
	// the chart's namespace: the chart's RBAC is enough, namespace and all.
	t.Run("the operator installs KubeVirt with the chart's RBAC", func(t *testing.T) {
		cfg := sandboxtest.ServiceAccountConfig(t, c, sb.RESTConfig(), namespace, "virt-operator")
		opctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- operator.Run(opctx, cfg, operator.Options{
				Namespace: namespace, MetricsAddr: "0", HealthAddr: "0", LeaderElection: true,
				Env: deployid.MapEnv{"VIRT_OPERATOR_IMAGE": kubevirtImage},
			})
		}()
		defer func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("operator: %v", err)
			}
		}()
		kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: namespace}}
		if err := c.Create(ctx, kv); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		sandboxtest.Eventually(t, 3*time.Minute, "KubeVirt Deployed and Available", func() (bool, error) {
			if err := k.get(kv, namespace, "kubevirt"); err != nil {
				return false, err
			}
			for _, cond := range kv.Status.Conditions {
				if cond.Type == v1.KubeVirtConditionAvailable && cond.Status == corev1.ConditionTrue && kv.Status.Phase == v1.KubeVirtPhaseDeployed {
					return true, nil
				}
			}
			return false, fmt.Errorf("phase %s, conditions %+v", kv.Status.Phase, kv.Status.Conditions)
		})
		t.Logf("KubeVirt Available %s after the CR", time.Since(start).Round(100*time.Millisecond))
	})

	// Upgrade to a new operator image: both image fields follow, the Deployment
	// rolls, and nothing else is asked again.
	v2Image := repository + ":v0.2.0"
	k.mustRun("upgrade", release, k.chart, "--namespace", namespace, "--reuse-values", "--wait", "--timeout", "2m",
		"--set-string", "image.tag=v0.2.0")
	k.waitAvailable(v2Image, 2)
	if err := k.get(d, namespace, "virt-operator"); err != nil {
		t.Fatal(err)
	}
	if image, env := deploymentImages(d); image != v2Image || env != v2Image {
		t.Errorf("after the upgrade: Deployment image %s, VIRT_OPERATOR_IMAGE %s; want %s", image, env, v2Image)
	}
	if out := k.mustRun("history", release, "--namespace", namespace); !strings.Contains(out, "deployed") || strings.Count(out, "\n") != 3 {
		t.Errorf("helm history: want 2 revisions, the second deployed:\n%s", out)
	}

	// monitoring.enabled adds config/prometheus's objects (the prometheus-operator's
	// ServiceMonitor CRD installed first, as the chart asks).
	createCRD(t, c, filepath.Join(sandboxtest.RepoRoot(), "test", "e2e", "testdata", "monitoring-crds", "monitoring.coreos.com_servicemonitors.yaml"))
	k.mustRun("upgrade", release, k.chart, "--namespace", namespace, "--reuse-values", "--wait", "--timeout", "2m",
		"--set", "monitoring.enabled=true,monitoring.serviceMonitor.labels.release=kps")
	sm := &unstructured.Unstructured{}
	sm.SetAPIVersion("monitoring.coreos.com/v1")
	sm.SetKind("ServiceMonitor")
	if err := k.get(sm, namespace, "virt-operator"); err != nil {
		t.Error(err)
	} else if sm.GetLabels()["release"] != "kps" {
		t.Errorf("ServiceMonitor labels %v, want release=kps among them", sm.GetLabels())
	}
	if err := k.get(&corev1.Service{}, namespace, "virt-operator-metrics"); err != nil {
		t.Error(err)
	}
	if err := k.get(d, namespace, "virt-operator"); err != nil {
		t.Fatal(err)
	}
	if image, _ := deploymentImages(d); image != v2Image {
		t.Errorf("after an upgrade with --reuse-values, the image is %s, want %s still", image, v2Image)
	}

	// Uninstall removes the operator and its RBAC, and keeps the KubeVirt CRD (so
	// the KubeVirt CR), the namespace and the PriorityClass.
	k.mustRun("uninstall", release, "--namespace", namespace, "--wait", "--timeout", "2m")
	for _, gone := range []struct {
		obj      client.Object
		ns, name string
	}{
		{&appsv1.Deployment{}, namespace, "virt-operator"},
		{&corev1.ServiceAccount{}, namespace, "virt-operator"},
		{&rbacv1.ClusterRole{}, "", "virt-operator"},
		{&rbacv1.ClusterRoleBinding{}, "", "virt-operator"},
		{&rbacv1.RoleBinding{}, "kube-system", "virt-operator"},
		{&rbacv1.ClusterRoleBinding{}, "", "virt-operator-metrics-reader"},
		{&corev1.Service{}, namespace, "virt-operator-metrics"},
		{sm, namespace, "virt-operator"},
	} {
		err := k.get(gone.obj, gone.ns, gone.name)
		if err == nil && gone.obj.GetDeletionTimestamp() == nil {
			t.Errorf("after helm uninstall, %T %s/%s still exists", gone.obj, gone.ns, gone.name)
		} else if err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
	for _, kept := range []struct {
		obj      client.Object
		ns, name string
	}{
		{&apiextensionsv1.CustomResourceDefinition{}, "", crdName},
		{&corev1.Namespace{}, "", namespace},
		{&schedulingv1.PriorityClass{}, "", "kubevirt-cluster-critical"},
		{&v1.KubeVirt{}, namespace, "kubevirt"},
	} {
		if err := k.get(kept.obj, kept.ns, kept.name); err != nil || kept.obj.GetDeletionTimestamp() != nil {
			t.Errorf("after helm uninstall, %T %s/%s: %v (deleting: %v); want kept", kept.obj, kept.ns, kept.name, err, kept.obj.GetDeletionTimestamp())
		}
	}

	// Installing the release again takes the kept objects back.
	k.mustRun("install", release, k.chart, "--namespace", namespace, "--create-namespace", "--wait", "--timeout", "2m",
		"--set", "namespace.name="+namespace, "--set-string", "image.tag=v0.2.0")
	k.waitAvailable(v2Image, 2)
}
