// Package delegation_test installs a KubeVirt release the builtin generator does not
// know (v1.7.4) from that release's own operator image, which the install-strategy
// Job runs in upstream's --dump-install-strategy mode (here KubeVirt's own v1.7.4
// binary, from ../shared/upstream, on the sandbox's Job runner), then upgrades it to
// v1.8.4 and v1.9.0, which the builtin generator renders. Asked for v1.9.0 straight
// from v1.7.4 first, the preflight holds the skip of a minor and names the hop.
//
// A strategy planted for the delegated release before the install (granting
// everything to every user) is refused and never applied, and once the writer
// policy is in force the API server refuses any further plant while the Job runs.
package delegation_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/controller/kubevirt/strategysource"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/operator"
	"github.com/virt-operator/virt-operator/internal/preflight"
	"github.com/virt-operator/virt-operator/internal/sandbox"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/trust"
)

const (
	namespace = "kubevirt"
	ownImage  = "ghcr.io/virt-operator/virt-operator:devel"
)

func init() { ctrllog.SetLogger(logr.Discard()) }

func TestUnknownReleaseFromItsOwnOperatorThenUpgrades(t *testing.T) {
	upstream := sandboxtest.UpstreamBinary(t, "v1.7.4", "virt-operator")
	sb := sandboxtest.Start(t, 3, sandboxtest.WithHostExec(t), func(o *sandbox.Options) {
		o.HostExecImages = map[string]string{"quay.io/kubevirt/virt-operator:v1.7.4": upstream}
	})
	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(sb.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.InstallOperatorManifests(t, c, namespace)
	cfg := sandboxtest.ServiceAccountConfig(t, c, sb.RESTConfig(), namespace, "virt-operator")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, cfg, operator.Options{Namespace: namespace, MetricsAddr: "0", HealthAddr: "0", LeaderElection: true,
			Env: deployid.MapEnv{deployid.EnvVirtOperatorImage: ownImage}})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
	})

	// Jobs are collected once done: record every Job's image as it appears.
	jobImages := map[string]string{}
	watchJobs := func() {
		jobs := &batchv1.JobList{}
		if c.List(t.Context(), jobs, client.InNamespace(namespace)) == nil {
			for _, j := range jobs.Items {
				jobImages[j.Annotations[metadata.InstallStrategyVersionAnnotation]] = j.Spec.Template.Spec.Containers[0].Image
			}
		}
	}

	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: namespace}, Spec: v1.KubeVirtSpec{ImageTag: "v1.7.4"}}
	plantedCM := plant(t, c, kv, "kubevirt-install-strategy-planted")
	if err := c.Create(t.Context(), kv); err != nil {
		t.Fatal(err)
	}
	refusedPlant(t, c, kv, plantedCM)
	setTag := func(version string) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(kv), kv); err != nil {
				return err
			}
			kv.Spec.ImageTag = version
			return c.Update(t.Context(), kv)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, version := range []string{"v1.7.4", "v1.8.4", "v1.9.0"} {
		if i == 1 {
			skipAMinor(t, c, kv, setTag)
		}
		start := time.Now()
		if i > 0 {
			setTag(version)
		}
		sandboxtest.Eventually(t, 4*time.Minute, "KubeVirt "+version+" Available", func() (bool, error) {
			watchJobs()
			got := &v1.KubeVirt{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(kv), got); err != nil {
				return false, err
			}
			available := false
			for _, cond := range got.Status.Conditions {
				if cond.Type == v1.KubeVirtConditionAvailable && cond.Status == corev1.ConditionTrue {
					available = true
				}
			}
			return available && got.Status.ObservedKubeVirtVersion == version,
				fmt.Errorf("observed %q, conditions %+v", got.Status.ObservedKubeVirtVersion, got.Status.Conditions)
		})
		t.Logf("%s Available %v after it was asked for", version, time.Since(start).Round(100*time.Millisecond))
		checkRunning(t, c, version)
	}
	// status.history records each hop, newest first, each one Succeeded.
	got := &v1.KubeVirt{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(kv), got); err != nil {
		t.Fatal(err)
	}
	var hops []string
	for _, h := range got.Status.History {
		if h.Outcome == "Succeeded" {
			hops = append(hops, h.ToVersion)
		}
	}
	if want := []string{"v1.9.0", "v1.8.4", "v1.7.4"}; !slices.Equal(hops, want) {
		t.Errorf("history's succeeded deployments %v, want one per hop %v (history %+v)", hops, want, got.Status.History)
	}

	if got := jobImages["v1.7.4"]; got != "quay.io/kubevirt/virt-operator:v1.7.4" {
		t.Errorf("v1.7.4's strategy was dumped by %q, want the release's own operator", got)
	}
	for _, version := range []string{"v1.8.4", "v1.9.0"} {
		if got := jobImages[version]; got != ownImage {
			t.Errorf("%s's strategy was dumped by %q, want this operator's own image", version, got)
		}
	}
	cms := &corev1.ConfigMapList{}
	if err := c.List(t.Context(), cms, client.InNamespace(namespace), client.HasLabels{metadata.InstallStrategyLabel}); err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != 1 || cms.Items[0].Annotations[metadata.InstallStrategyVersionAnnotation] != "v1.9.0" {
		t.Errorf("%d strategy ConfigMaps left, want v1.9.0's only", len(cms.Items))
	}
}

// skipAMinor asks for v1.9.0 while v1.7.4 runs: the preflight holds it, naming
// the hop to take (v1.8.4), and nothing of v1.9.0 is rolled out.
func skipAMinor(t *testing.T, c client.Client, kv *v1.KubeVirt, setTag func(string)) {
	t.Helper()
	setTag("v1.9.0")
	var held string
	sandboxtest.Eventually(t, 3*time.Minute, "v1.7.4 -> v1.9.0 held by the preflight", func() (bool, error) {
		got := &v1.KubeVirt{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(kv), got); err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == v1.KubeVirtConditionUpgradeable && cond.Status == corev1.ConditionFalse && cond.Reason == preflight.CheckUpgradePath {
				held = cond.Message
				return got.Status.RolloutHold != nil, nil
			}
		}
		return false, fmt.Errorf("conditions %+v", got.Status.Conditions)
	})
	if !strings.Contains(held, "set spec.imageTag to v1.8.4") || !strings.Contains(held, "v1.8.4, then v1.9.0") {
		t.Errorf("the hold says %q, want the hop v1.8.4 named", held)
	}
	t.Logf("held: %s", held)
	checkRunning(t, c, "v1.7.4")
}

// checkRunning: every component Deployment and the DaemonSet run version's images
// (virt-template its own) and carry its install-strategy annotations.
func checkRunning(t *testing.T, c client.Client, version string) {
	t.Helper()
	deps := &appsv1.DeploymentList{}
	if err := c.List(t.Context(), deps, client.InNamespace(namespace), client.MatchingLabels{metadata.ManagedByLabel: metadata.ManagedByValue}); err != nil {
		t.Fatal(err)
	}
	// virt-api and virt-controller at least: before v1.9 virt-exportproxy runs
	// only with the VMExport gate, as that release's own operator decides.
	if len(deps.Items) < 2 {
		t.Fatalf("%d Deployments", len(deps.Items))
	}
	for _, d := range deps.Items {
		img := d.Spec.Template.Spec.Containers[0].Image
		if !strings.HasPrefix(d.Name, "virt-template") && !strings.HasSuffix(img, ":"+version) {
			t.Errorf("%s runs %s on %s", d.Name, img, version)
		}
		if d.Annotations[metadata.InstallStrategyVersionAnnotation] != version {
			t.Errorf("%s is annotated for %s", d.Name, d.Annotations[metadata.InstallStrategyVersionAnnotation])
		}
	}
	ds := &appsv1.DaemonSet{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: "virt-handler"}, ds); err != nil {
		t.Fatal(err)
	}
	if img := ds.Spec.Template.Spec.Containers[0].Image; !strings.HasSuffix(img, ":"+version) {
		t.Errorf("virt-handler runs %s on %s", img, version)
	}
	role := &rbacv1.ClusterRole{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: "kubevirt.io:default"}, role); err != nil {
		t.Fatal(err)
	}
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, "*") || slices.Contains(r.Verbs, "*") {
			t.Errorf("kubevirt.io:default grants %+v on %s: a planted strategy was applied", r, version)
		}
	}
}

// plant creates, before the install, a strategy ConfigMap claiming kv's
// deployment ID that grants everything to every authenticated user: what
// anyone who may write ConfigMaps in the namespace could do.
func plant(t *testing.T, c client.Client, kv *v1.KubeVirt, name string) *corev1.ConfigMap {
	t.Helper()
	cfg, err := deployid.FromKubeVirt(kv, deployid.MapEnv{deployid.EnvVirtOperatorImage: ownImage})
	if err != nil {
		t.Fatal(err)
	}
	s := &strategy.Strategy{}
	for _, o := range []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt.io:default"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt.io:default"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubevirt.io:default"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:authenticated"}}},
	} {
		if err := s.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	cm, err := strategy.Encode(s, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	cm.Name = name
	if err := c.Create(t.Context(), cm); err != nil {
		t.Fatalf("planting %s before the install: %v", name, err)
	}
	return cm
}

// refusedPlant: the ConfigMap planted before the install is deleted and named
// in a Warning; once the operator's writer policy is in force, a ConfigMap
// planted while the strategy Job runs is refused by the API server itself.
func refusedPlant(t *testing.T, c client.Client, kv *v1.KubeVirt, planted *corev1.ConfigMap) {
	t.Helper()
	sandboxtest.Eventually(t, 2*time.Minute, "the planted strategy refused", func() (bool, error) {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(planted), &corev1.ConfigMap{})
		if !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("%s still there (%v)", planted.Name, err)
		}
		events := &eventsv1.EventList{}
		if err := c.List(t.Context(), events, client.InNamespace(namespace)); err != nil {
			return false, err
		}
		for _, ev := range events.Items {
			if ev.Reason == strategysource.ReasonUntrusted && ev.Type == corev1.EventTypeWarning && strings.Contains(ev.Note, planted.Name) {
				return true, nil
			}
		}
		return false, fmt.Errorf("no %s Warning names %s", strategysource.ReasonUntrusted, planted.Name)
	})
	policy := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	sandboxtest.Eventually(t, 2*time.Minute, "the writer policy in force", func() (bool, error) {
		if err := c.Get(t.Context(), client.ObjectKey{Name: trust.WriterPolicyName(namespace)}, policy); err != nil {
			return false, err
		}
		again := planted.DeepCopy()
		again.ResourceVersion, again.Name = "", planted.Name+"-during-the-job"
		err := c.Create(t.Context(), again)
		if err == nil {
			_ = c.Delete(t.Context(), again)
			return false, errors.New("a ConfigMap was planted while the writer policy is in force")
		}
		return strings.Contains(err.Error(), "written only by the install-strategy Job"), err
	})
}
