// Package realkubevirt_test runs KubeVirt's own v1.9.0 virt-controller, virt-api,
// virt-synchronization-controller and virt-exportproxy (from ../shared/upstream) as
// host processes standing in for their pods, against what this operator installs
// on the sandbox, and checks they work on it: none of their requests is refused,
// each gets ready (and virt-controller the lead), a VMI that passed virt-api's
// mutating and validating webhooks gets its launcher pod and a status, a VM gets its
// VMI, and every webhook path the operator's configurations name answers over TLS
// with the CA bundle the configuration carries.
//
// The sandbox's VM simulator, which otherwise plays virt-controller, is off. No
// virt-handler runs (it needs a real node): the nodes get what it would give them,
// the node labeller's labels and the device plugins' resources. Webhook admission is
// off in the sandbox's kube-apiserver, so the webhooks are called by hand.
package realkubevirt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/operator"
	"github.com/virt-operator/virt-operator/internal/sandbox"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
)

const (
	namespace = "kubevirt"
	release   = "v1.9.0"
	ownImage  = "ghcr.io/virt-operator/virt-operator:devel"
)

type env struct {
	sb          *sandbox.Sandbox
	c           client.Client
	webhookAddr string
	audit       string
}

func TestKubeVirtsOwnComponentsRunOnTheOperatorsInstall(t *testing.T) {
	bins := map[string]string{}
	for _, name := range []string{"virt-controller", "virt-api", "virt-exportproxy", "virt-synchronization-controller"} {
		bins[name] = sandboxtest.UpstreamBinary(t, release, name)
	}
	e := startEnv(t)
	e.prepareNodes(t)

	t.Run("virt-controller, virt-api and virt-exportproxy", func(t *testing.T) {
		ctrl := e.start(t, component{name: "virt-controller", binary: bins["virt-controller"], addr: "127.0.0.2"})
		api := e.start(t, component{name: "virt-api", binary: bins["virt-api"], addr: "127.0.0.3"})
		proxy := e.start(t, component{name: "virt-exportproxy", binary: bins["virt-exportproxy"], addr: "127.0.0.4"})
		api.ready(t, "/apis/subresources.kubevirt.io/v1/healthz", 2*time.Minute)
		ctrl.ready(t, "/healthz", 2*time.Minute)
		ctrl.ready(t, "/leader", 2*time.Minute) // ready only as the leader
		proxy.ready(t, "/healthz", 2*time.Minute)
		e.leaseHeld(t, "virt-controller")

		t.Run("every webhook path answers over TLS with its configuration's CA bundle", func(t *testing.T) {
			e.everyWebhookAnswers(t, map[string]string{"virt-api": api.addr + ":8443", "kubevirt-operator-webhook": e.webhookAddr})
		})
		var vmi []byte
		t.Run("a valid VMI passes mutate then validate", func(t *testing.T) { vmi = e.admitVMI(t, api.addr+":8443") })
		t.Run("the VMI gets a launcher pod and a status", func(t *testing.T) { e.vmiScheduled(t, vmi) })
		t.Run("a VM with runStrategy Always gets its VMI", func(t *testing.T) { e.vmGetsVMI(t) })
		for _, r := range []*running{ctrl, api, proxy} {
			if errs := certificateErrors(r.log); len(errs) > 0 {
				t.Errorf("%s could not load files its pod mounts:\n%s", r.name, strings.Join(errs, "\n"))
			}
		}
	})
	// It binds its health port on every address: alone, after the others.
	t.Run("virt-synchronization-controller", func(t *testing.T) {
		sync := e.start(t, component{name: "virt-synchronization-controller", binary: bins["virt-synchronization-controller"], addr: "127.0.0.5"})
		sync.ready(t, "/healthz", 2*time.Minute)
		if errs := certificateErrors(sync.log); len(errs) > 0 {
			t.Errorf("it could not load files its pod mounts:\n%s", strings.Join(errs, "\n"))
		}
	})
	t.Run("no request of theirs was refused", func(t *testing.T) {
		for _, sa := range []string{"kubevirt-controller", "kubevirt-apiserver", "kubevirt-exportproxy", "kubevirt-synchronization-controller"} {
			user := "system:serviceaccount:" + namespace + ":" + sa
			requests, refused := auditOf(t, e.audit, user)
			if requests == 0 {
				t.Errorf("%s made no request: the audit filter is wrong", user)
			}
			for _, r := range refused {
				t.Errorf("%s was refused: %s", user, r)
			}
			t.Logf("%s: %d requests, %d refused", user, requests, len(refused))
		}
	})
}

func startEnv(t *testing.T) *env {
	t.Helper()
	e := &env{audit: filepath.Join(t.TempDir(), "audit.log")}
	e.sb = sandboxtest.Start(t, 2, sandboxtest.WithHostExec(t), func(o *sandbox.Options) {
		o.AuditLog, o.NoVMSim = e.audit, true // KubeVirt's own virt-controller stands in
	})
	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	if e.c, err = client.New(e.sb.RESTConfig(), client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	sandboxtest.InstallOperatorManifests(t, e.c, namespace)
	e.webhookAddr = sandboxtest.FreeAddr(t)
	cfg := sandboxtest.ServiceAccountConfig(t, e.c, e.sb.RESTConfig(), namespace, "virt-operator")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- operator.Run(ctx, cfg, operator.Options{
			Namespace: namespace, MetricsAddr: "0", HealthAddr: "0", WebhookAddr: e.webhookAddr, LeaderElection: true,
			Env: deployid.MapEnv{deployid.EnvVirtOperatorImage: ownImage},
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
	})
	// The synchronization controller is deployed with its gate; virt-template has
	// no binary here.
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: namespace}}
	kv.Spec.ImageTag = release
	kv.Spec.Configuration.DeveloperConfiguration = &v1.DeveloperConfiguration{
		FeatureGates: []string{"DecentralizedLiveMigration"}, DisabledFeatureGates: []string{"Template"},
	}
	if err := e.c.Create(t.Context(), kv); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Eventually(t, 3*time.Minute, "KubeVirt "+release+" Deployed", func() (bool, error) {
		got := &v1.KubeVirt{}
		if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(kv), got); err != nil {
			return false, err
		}
		return got.Status.Phase == v1.KubeVirtPhaseDeployed && got.Status.ObservedKubeVirtVersion == release, fmt.Errorf("status %s %s", got.Status.Phase, got.Status.ObservedKubeVirtVersion)
	})
	return e
}

// prepareNodes gives the nodes what virt-handler would: the schedulable label and
// its device plugins' resources.
func (e *env) prepareNodes(t *testing.T) {
	t.Helper()
	nodes := &corev1.NodeList{}
	if err := e.c.List(t.Context(), nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		// virt-handler's node labeller marks the node schedulable and lists the
		// machine types it runs (launcher pods select q35 on amd64).
		labels := []byte(`{"metadata":{"labels":{"kubevirt.io/schedulable":"true","machine-type.node.kubevirt.io/q35":"true","kubernetes.io/arch":"amd64"}}}`)
		if err := e.c.Patch(t.Context(), &n, client.RawPatch(types.MergePatchType, labels)); err != nil {
			t.Fatal(err)
		}
		n.Status.Capacity = n.Status.Capacity.DeepCopy()
		n.Status.Allocatable = n.Status.Allocatable.DeepCopy()
		for _, dev := range []corev1.ResourceName{"devices.kubevirt.io/kvm", "devices.kubevirt.io/tun", "devices.kubevirt.io/vhost-net"} {
			n.Status.Capacity[dev] = resource.MustParse("1k")
			n.Status.Allocatable[dev] = resource.MustParse("1k")
		}
		// kwok's nodes report none; launcher pods request some.
		n.Status.Capacity[corev1.ResourceEphemeralStorage] = resource.MustParse("100Gi")
		n.Status.Allocatable[corev1.ResourceEphemeralStorage] = resource.MustParse("100Gi")
		if err := e.c.Status().Update(t.Context(), &n); err != nil {
			t.Fatal(err)
		}
	}
}

func (e *env) leaseHeld(t *testing.T, name string) {
	t.Helper()
	sandboxtest.Eventually(t, time.Minute, "the "+name+" lease held", func() (bool, error) {
		l := &coordinationv1.Lease{}
		if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: name}, l); err != nil {
			return false, err
		}
		return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", nil
	})
}

// everyWebhookAnswers sends each webhook of the operator's webhook configurations
// an AdmissionReview at the address of its Service's backend.
func (e *env) everyWebhookAnswers(t *testing.T, backends map[string]string) {
	ctx := t.Context()
	var hooks []hook
	vwcs := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	mwcs := &admissionregistrationv1.MutatingWebhookConfigurationList{}
	if err := e.c.List(ctx, vwcs, client.MatchingLabels{"app.kubernetes.io/managed-by": "virt-operator"}); err != nil {
		t.Fatal(err)
	}
	if err := e.c.List(ctx, mwcs, client.MatchingLabels{"app.kubernetes.io/managed-by": "virt-operator"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range vwcs.Items {
		var cc []admissionregistrationv1.WebhookClientConfig
		var names []string
		var rules [][]admissionregistrationv1.RuleWithOperations
		for _, w := range c.Webhooks {
			cc, names, rules = append(cc, w.ClientConfig), append(names, w.Name), append(rules, w.Rules)
		}
		hooks = append(hooks, hooksOf(c.Name, cc, names, rules)...)
	}
	for _, c := range mwcs.Items {
		var cc []admissionregistrationv1.WebhookClientConfig
		var names []string
		var rules [][]admissionregistrationv1.RuleWithOperations
		for _, w := range c.Webhooks {
			cc, names, rules = append(cc, w.ClientConfig), append(names, w.Name), append(rules, w.Rules)
		}
		hooks = append(hooks, hooksOf(c.Name, cc, names, rules)...)
	}
	if len(hooks) < 25 {
		t.Fatalf("only %d webhooks in the operator's configurations", len(hooks))
	}
	allowed := 0
	for _, h := range hooks {
		addr, ok := backends[h.service]
		if !ok {
			t.Errorf("%s: nothing serves Service %s", h, h.service)
			continue
		}
		resp, err := review(t, h, addr, probeRequest(h, e.kindOf(t, h.rule)))
		if err != nil {
			t.Error(err)
			continue
		}
		if resp.Allowed {
			allowed++
		}
	}
	t.Logf("%d webhook paths answered (%d allowed the probe object)", len(hooks), allowed)
}

// kindOf is the kind a webhook rule's first resource holds.
func (e *env) kindOf(t *testing.T, r admissionregistrationv1.RuleWithOperations) schema.GroupVersionKind {
	if len(r.Resources) == 0 || len(r.APIGroups) == 0 || len(r.APIVersions) == 0 {
		return schema.GroupVersionKind{Version: "v1", Kind: "Unknown"}
	}
	res := r.Resources[0]
	if res == "pods/eviction" {
		return schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}
	}
	res, _, _ = strings.Cut(res, "/")
	version := r.APIVersions[0]
	if version == "*" {
		version = "v1"
	}
	gvk, err := e.c.RESTMapper().KindFor(schema.GroupVersionResource{Group: r.APIGroups[0], Version: version, Resource: res})
	if err != nil {
		return schema.GroupVersionKind{Group: r.APIGroups[0], Version: version, Kind: "Unknown"}
	}
	return gvk
}

// testVMI is a small VMI as a user writes it: no architecture, machine or defaults.
// testVMI is a VMI as a Go client sends it: with an empty status (the field is
// a struct), which virt-api's mutating webhook replaces.
const testVMI = `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"testvmi","namespace":"default"},
"spec":{"domain":{"devices":{"disks":[{"name":"containerdisk","disk":{"bus":"virtio"}}]},"resources":{"requests":{"memory":"128Mi"}}},
"volumes":[{"name":"containerdisk","containerDisk":{"image":"quay.io/kubevirt/cirros-container-disk-demo"}}]},
"status":{}}`

// admitVMI sends testVMI through virt-api's VMI mutating webhook, then the result
// through its validating webhook, as kube-apiserver would for a create.
func (e *env) admitVMI(t *testing.T, apiAddr string) []byte {
	t.Helper()
	mutator, validator := e.vmiHooks(t)
	req := func(obj []byte) *admissionv1.AdmissionRequest {
		return &admissionv1.AdmissionRequest{
			Kind:     metav1.GroupVersionKind{Group: "kubevirt.io", Version: "v1", Kind: "VirtualMachineInstance"},
			Resource: metav1.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"},
			Name:     "testvmi", Namespace: "default", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: obj},
			UserInfo: authUser(),
		}
	}
	resp, err := review(t, mutator, apiAddr, req([]byte(testVMI)))
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Allowed {
		t.Fatalf("virt-api's mutating webhook refused the VMI: %v", resp.Result)
	}
	out, err := mutated([]byte(testVMI), resp)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	if arch, _, _ := unstructured.NestedString(m, "spec", "architecture"); arch == "" {
		t.Errorf("the mutated VMI names no architecture (status.defaultArchitecture): %s", out)
	}
	resp, err = review(t, validator, apiAddr, req(out))
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Allowed {
		t.Fatalf("virt-api's validating webhook refused the mutated VMI: %v", resp.Result)
	}
	return out
}

func authUser() authenticationv1.UserInfo {
	return authenticationv1.UserInfo{Username: "kubernetes-admin", Groups: []string{"system:masters", "system:authenticated"}}
}

func (e *env) vmiHooks(t *testing.T) (mutator, validator hook) {
	t.Helper()
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := e.c.Get(t.Context(), client.ObjectKey{Name: "virt-api-mutator"}, mwc); err != nil {
		t.Fatal(err)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := e.c.Get(t.Context(), client.ObjectKey{Name: "virt-api-validator"}, vwc); err != nil {
		t.Fatal(err)
	}
	find := func(config string, ws []admissionregistrationv1.WebhookClientConfig, names []string, rules [][]admissionregistrationv1.RuleWithOperations) hook {
		for _, h := range hooksOf(config, ws, names, rules) {
			if len(h.rule.Resources) > 0 && h.rule.Resources[0] == "virtualmachineinstances" && containsOp(h.rule.Operations, admissionregistrationv1.Create) {
				return h
			}
		}
		t.Fatalf("%s has no VMI create webhook", config)
		return hook{}
	}
	var mcc, vcc []admissionregistrationv1.WebhookClientConfig
	var mn, vn []string
	var mr, vr [][]admissionregistrationv1.RuleWithOperations
	for _, w := range mwc.Webhooks {
		mcc, mn, mr = append(mcc, w.ClientConfig), append(mn, w.Name), append(mr, w.Rules)
	}
	for _, w := range vwc.Webhooks {
		vcc, vn, vr = append(vcc, w.ClientConfig), append(vn, w.Name), append(vr, w.Rules)
	}
	return find(mwc.Name, mcc, mn, mr), find(vwc.Name, vcc, vn, vr)
}

func containsOp(ops []admissionregistrationv1.OperationType, op admissionregistrationv1.OperationType) bool {
	for _, o := range ops {
		if o == op || o == admissionregistrationv1.OperationAll {
			return true
		}
	}
	return false
}

// vmiScheduled creates the admitted VMI and waits until virt-controller gave it a
// launcher pod and wrote its phase and node.
func (e *env) vmiScheduled(t *testing.T, vmi []byte) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(vmi); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Create(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Eventually(t, 2*time.Minute, "the VMI's launcher pod", func() (bool, error) {
		pods := &corev1.PodList{}
		if err := e.c.List(t.Context(), pods, client.InNamespace("default"), client.MatchingLabels{"kubevirt.io": "virt-launcher"}); err != nil {
			return false, err
		}
		return len(pods.Items) > 0, nil
	})
	sandboxtest.Eventually(t, 2*time.Minute, "the VMI's phase and node", func() (bool, error) {
		got := &v1.VirtualMachineInstance{}
		if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "testvmi"}, got); err != nil {
			return false, err
		}
		pods := &corev1.PodList{}
		if err := e.c.List(t.Context(), pods, client.InNamespace("default"), client.MatchingLabels{"kubevirt.io": "virt-launcher"}); err != nil {
			return false, err
		}
		var launcher []string
		for _, p := range pods.Items {
			launcher = append(launcher, fmt.Sprintf("%s %s on %q %v (selector %v, affinity %v)", p.Name, p.Status.Phase, p.Spec.NodeName, p.Status.Conditions, p.Spec.NodeSelector, p.Spec.Affinity))
		}
		return got.Status.NodeName != "" && got.Status.Phase != "", fmt.Errorf("phase %q node %q; launcher pods: %v", got.Status.Phase, got.Status.NodeName, launcher)
	})
	got := &v1.VirtualMachineInstance{}
	_ = e.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "testvmi"}, got)
	t.Logf("VMI testvmi: phase %s on %s", got.Status.Phase, got.Status.NodeName)
}

func (e *env) vmGetsVMI(t *testing.T) {
	t.Helper()
	vm := &unstructured.Unstructured{}
	if err := vm.UnmarshalJSON([]byte(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"testvm","namespace":"default"},
"spec":{"runStrategy":"Always","template":{"spec":{"architecture":"amd64","domain":{"devices":{},"resources":{"requests":{"memory":"128Mi"}}}}}}}`)); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Create(t.Context(), vm); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Eventually(t, 2*time.Minute, "the VM's VMI", func() (bool, error) {
		vmi := &v1.VirtualMachineInstance{}
		err := e.c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "testvm"}, vmi)
		return err == nil && metav1.IsControlledBy(vmi, vm), err
	})
}
