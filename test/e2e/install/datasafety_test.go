package install_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/operator"
	"github.com/virt-operator/virt-operator/internal/preflight"
	"github.com/virt-operator/virt-operator/internal/sandbox"
	"github.com/virt-operator/virt-operator/internal/sandbox/sandboxtest"
)

// userObject creates an object of a KubeVirt kind, as a user would.
func (e *env) userObject(gvk schema.GroupVersionKind, namespace, name string, spec map[string]any) *unstructured.Unstructured {
	e.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	e.eventually("created "+gvk.Kind+" "+name, time.Minute, func() (bool, error) {
		err := e.c.Create(context.Background(), u)
		return err == nil || apierrors.IsAlreadyExists(err), nil // its CRD may still be establishing
	})
	return u
}

func (e *env) exists(obj client.Object) bool {
	e.t.Helper()
	err := e.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if client.IgnoreNotFound(err) != nil {
		e.t.Fatal(err)
	}
	return err == nil
}

func (e *env) waitRolledOver(version string, timeout time.Duration) *v1.KubeVirt {
	e.t.Helper()
	e.eventually("rolled over to "+version, timeout, func() (bool, error) {
		st := e.kubeVirt().Status
		return st.ObservedKubeVirtVersion == version && st.ObservedDeploymentID == st.TargetDeploymentID, nil
	})
	return e.kubeVirt()
}

var (
	templateGVK = schema.GroupVersionKind{Group: "template.kubevirt.io", Version: "v1alpha1", Kind: "VirtualMachineTemplate"}
	pluginGVK   = schema.GroupVersionKind{Group: "plugin.kubevirt.io", Version: "v1alpha1", Kind: "Plugin"}
	snapshotGVK = schema.GroupVersionKind{Group: "snapshot.kubevirt.io", Version: "v1beta1", Kind: "VirtualMachineSnapshot"}
	policyGVK   = schema.GroupVersionKind{Group: "migrations.kubevirt.io", Version: "v1alpha1", Kind: "MigrationPolicy"}
)

const (
	templatesCRD = "virtualmachinetemplates.template.kubevirt.io"
	pluginsCRD   = "plugins.plugin.kubevirt.io"
)

// Nothing lost: a gate turned off and a rollback keep the CRDs that hold user
// objects (the plan and the preflight said so first, DataRetained names them
// after); the uninstall guard counts every kind an uninstall deletes, at
// admission and, for a delete that got past it, in the controller; with the
// objects gone the uninstall completes.
func TestNothingLost(t *testing.T) {
	t.Parallel()
	e := startEnvWithoutOperator(t, 3)
	webhook := sandboxtest.FreeAddr(t)
	start := func() { e.startOperator(func(o *operator.Options) { o.WebhookAddr = webhook }) }
	start()
	t.Cleanup(e.stopOperator)
	spec := v1.KubeVirtSpec{ImageTag: "v1.9.0", HandlerRollout: &v1.HandlerRolloutPolicy{BakeTime: &v1.Duration{Duration: 2 * time.Second}}}
	e.createKubeVirt(spec)
	e.waitAvailable(3 * time.Minute)
	template := e.userObject(templateGVK, "default", "fedora", map[string]any{
		"virtualMachine": map[string]any{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": map[string]any{"name": "fedora"}, "spec": map[string]any{}}})
	plugin := e.userObject(pluginGVK, "", "sidecar", map[string]any{})

	t.Run("the Template gate turned off keeps the templates", func(t *testing.T) {
		off := spec
		off.Configuration.VirtTemplateDeployment = &v1.VirtTemplateDeployment{Enabled: new(bool)}
		out, code := e.plan(t, off)
		if code != 0 || !strings.Contains(out, "Keep     CustomResourceDefinition "+templatesCRD) || !strings.Contains(out, "1 VirtualMachineTemplates") ||
			!strings.Contains(out, templatesCRD+" kept for its data (1 VirtualMachineTemplates)") {
			t.Fatalf("the plan (exit %d) does not show the CRD kept:\n%s", code, out)
		}
		e.updateSpec(func(s *v1.KubeVirtSpec) {
			s.Configuration.VirtTemplateDeployment = off.Configuration.VirtTemplateDeployment
		})
		kv := e.waitRolledOver("v1.9.0", 3*time.Minute)
		e.eventually("DataRetained naming the templates", time.Minute, func() (bool, error) {
			c := condition(e.kubeVirt(), v1.KubeVirtConditionDataRetained)
			return c != nil && c.Status == "True" && strings.Contains(c.Message, templatesCRD+" (1 VirtualMachineTemplates"), nil
		})
		crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: templatesCRD}}
		if !e.exists(crd) || crd.DeletionTimestamp != nil || !e.exists(template) {
			t.Fatalf("the templates' CRD or the template is gone (observed %s)", kv.Status.ObservedDeploymentID)
		}
		if e.exists(&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "virtualmachinetemplaterequests.template.kubevirt.io"}}) {
			t.Error("the empty template-requests CRD was kept")
		}
		t.Logf("DataRetained: %s", condition(e.kubeVirt(), v1.KubeVirtConditionDataRetained).Message)
	})

	t.Run("a rollback to v1.8.4 keeps the plugins", func(t *testing.T) {
		// v1.9.0 stores exports as v1, which v1.8.4 does not serve: with no
		// export in the cluster the version is retired, nothing is lost.
		e.updateSpec(func(s *v1.KubeVirtSpec) { s.ImageTag = "v1.8.4" })
		e.waitRolledOver("v1.8.4", 4*time.Minute)
		e.eventually("DataRetained naming the plugins", time.Minute, func() (bool, error) {
			c := condition(e.kubeVirt(), v1.KubeVirtConditionDataRetained)
			return c != nil && strings.Contains(c.Message, pluginsCRD+" (1 Plugins") && strings.Contains(c.Message, templatesCRD), nil
		})
		crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: pluginsCRD}}
		if !e.exists(crd) || !e.exists(plugin) {
			t.Fatal("the plugins' CRD or the plugin is gone")
		}
		h := e.kubeVirt().Status.Preflight
		if h == nil || !strings.Contains(checkMessage(h, preflight.CheckRemovedCRDs), pluginsCRD+" kept for its data") ||
			!strings.Contains(checkMessage(h, preflight.CheckStoredVersions), "retired (no objects stored): virtualmachineexports.export.kubevirt.io v1") {
			t.Fatalf("the preflight did not name the plugins' CRD and the retired exports version: %+v", h)
		}
	})

	t.Run("the uninstall guard counts every kind it would delete", func(t *testing.T) {
		e.userObject(snapshotGVK, "default", "before-upgrade", map[string]any{
			"source": map[string]any{"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "fedora"}})
		e.userObject(policyGVK, "", "fast", map[string]any{"selectors": map[string]any{}})
		kv := e.kubeVirt()
		resp := e.reviewDelete(t, webhook, kv)
		for _, want := range []string{"1 MigrationPolicies", "1 Plugins", "1 VirtualMachineSnapshots", "1 VirtualMachineTemplates"} {
			if resp.Allowed || !strings.Contains(resp.Result.Message, want) {
				t.Fatalf("admission allowed %v or does not count %q: %+v", resp.Allowed, want, resp.Result)
			}
		}
		// A delete that gets past admission (here: sent while the operator is
		// down; the sandbox's API server calls no webhook) is held by the controller.
		e.stopOperator()
		if err := e.c.Delete(context.Background(), kv); err != nil {
			t.Fatal(err)
		}
		start()
		e.eventually("the uninstall held, naming the counts", 2*time.Minute, func() (bool, error) {
			c := condition(e.kubeVirt(), v1.KubeVirtConditionSynchronized)
			return c != nil && c.Reason == "DeletionBlockedByWorkloads" && strings.Contains(c.Message, "1 VirtualMachineSnapshots") &&
				strings.Contains(c.Message, "1 MigrationPolicies"), nil
		})
		if !e.exists(&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "virtualmachinesnapshots.snapshot.kubevirt.io"}}) {
			t.Fatal("a held uninstall deleted a CRD")
		}
		for _, gvk := range []schema.GroupVersionKind{snapshotGVK, policyGVK, templateGVK, pluginGVK} {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			if err := e.c.List(context.Background(), list); err != nil {
				t.Fatal(err)
			}
			for i := range list.Items {
				if err := e.c.Delete(context.Background(), &list.Items[i]); client.IgnoreNotFound(err) != nil {
					t.Fatal(err)
				}
			}
		}
		e.eventually("the uninstall done", 3*time.Minute, func() (bool, error) {
			err := e.c.Get(context.Background(), client.ObjectKeyFromObject(kv), &v1.KubeVirt{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
	})
}

func checkMessage(pf *v1.PreflightStatus, name string) string {
	for _, c := range pf.Checks {
		if c.Name == name {
			return c.Message
		}
	}
	return ""
}

// reviewDelete asks the operator's webhook, as the API server would (TLS
// checked against the configuration's CA bundle), whether kv may be deleted.
func (e *env) reviewDelete(t *testing.T, addr string, kv *v1.KubeVirt) *admissionv1.AdmissionResponse {
	t.Helper()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Name: "virt-operator-validator"}, vwc); err != nil {
		t.Fatal(err)
	}
	var hook admissionregistrationv1.ValidatingWebhook
	for _, w := range vwc.Webhooks {
		if w.ClientConfig.Service != nil && w.ClientConfig.Service.Path != nil && *w.ClientConfig.Service.Path == "/kubevirt-validate-delete" {
			hook = w
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(hook.ClientConfig.CABundle)
	httpClient := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12,
		ServerName: hook.ClientConfig.Service.Name + "." + hook.ClientConfig.Service.Namespace + ".svc"}}}
	raw, err := json.Marshal(kv)
	if err != nil {
		t.Fatal(err)
	}
	review, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID("delete-1"), Operation: admissionv1.Delete, OldObject: runtime.RawExtension{Raw: raw}}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClient.Post("https://"+addr+*hook.ClientConfig.Service.Path, "application/json", bytes.NewReader(review))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	out := &admissionv1.AdmissionReview{}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil || out.Response == nil {
		t.Fatalf("not an AdmissionReview (status %d): %v", resp.StatusCode, err)
	}
	return out.Response
}

// Admission never needs the operator for an edit that decides nothing: with
// the API server calling webhooks and the operator stopped, a metadata-only
// update of the CR (a finalizer, a label) is admitted, a spec edit refused.
func TestMetadataEditsNeedNoOperator(t *testing.T) {
	t.Parallel()
	e := startEnv(t, 3, func(o *sandbox.Options) { o.Webhooks = true })
	// virt-api's webhooks (failurePolicy Fail, on instancetypes among others)
	// have no backend here: the install writes no object they check.
	e.createKubeVirt(v1.KubeVirtSpec{ImageTag: "v1.9.0", Configuration: v1.KubeVirtConfiguration{
		CommonInstancetypesDeployment: &v1.CommonInstancetypesDeployment{Enabled: new(bool)}}})
	e.waitAvailable(3 * time.Minute)
	e.stopOperator()

	// Each edit reads, changes and writes again on a conflict: a status write
	// the stopped operator had sent may still commit after its client gave up.
	update := func(mutate func(*v1.KubeVirt)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			kv := e.kubeVirt()
			mutate(kv)
			return e.c.Update(context.Background(), kv)
		})
	}
	if err := update(func(kv *v1.KubeVirt) {
		kv.Labels = map[string]string{"team": "platform"}
		kv.Finalizers = append(kv.Finalizers, "example.com/audit")
	}); err != nil {
		t.Fatalf("a metadata-only update needed the operator: %v", err)
	}
	if err := update(func(kv *v1.KubeVirt) { kv.Finalizers = []string{metadata.KubeVirtFinalizer} }); err != nil {
		t.Fatalf("removing a finalizer needed the operator: %v", err)
	}
	err := update(func(kv *v1.KubeVirt) { kv.Spec.ImageTag = "v1.8.4" })
	if err == nil || !strings.Contains(err.Error(), "kubevirt-update-validator.kubevirt.io") {
		t.Fatalf("a spec edit with the operator down: %v, want refused by the update webhook", err)
	}
	t.Logf("refused: %v", err)
}
