package realkubevirt_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// hook is one webhook of a configuration: where kube-apiserver would send it.
type hook struct {
	config, name, service, namespace, path string
	port                                   int32
	caBundle                               []byte
	rule                                   admissionregistrationv1.RuleWithOperations
}

func (h hook) String() string {
	return fmt.Sprintf("%s/%s (%s.%s:%d%s)", h.config, h.name, h.service, h.namespace, h.port, h.path)
}

func hooksOf(config string, hooks []admissionregistrationv1.WebhookClientConfig, names []string, rules [][]admissionregistrationv1.RuleWithOperations) []hook {
	var out []hook
	for i, cc := range hooks {
		if cc.Service == nil {
			continue
		}
		h := hook{config: config, name: names[i], service: cc.Service.Name, namespace: cc.Service.Namespace, caBundle: cc.CABundle, port: 443}
		if cc.Service.Path != nil {
			h.path = *cc.Service.Path
		}
		if cc.Service.Port != nil {
			h.port = *cc.Service.Port
		}
		if len(rules[i]) > 0 {
			h.rule = rules[i][0]
		}
		out = append(out, h)
	}
	return out
}

// review POSTs an AdmissionReview for req to h at addr (where the Service's
// backend really listens), verifying TLS against the configuration's caBundle with
// the Service's DNS name, as kube-apiserver would.
func review(t *testing.T, h hook, addr string, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(h.caBundle) {
		return nil, fmt.Errorf("%s: the configuration carries no usable caBundle", h)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, ServerName: h.service + "." + h.namespace + ".svc",
	}}}
	if req.UID == "" {
		req.UID = uuid.NewUUID()
	}
	body, err := json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: req})
	if err != nil {
		return nil, err
	}
	resp, err := hc.Post("https://"+addr+h.path, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h, err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %s: %s", h, resp.Status, raw)
	}
	out := &admissionv1.AdmissionReview{}
	if err := json.Unmarshal(raw, out); err != nil || out.Response == nil {
		return nil, fmt.Errorf("%s: not an AdmissionReview (%v): %s", h, err, raw)
	}
	if out.Response.UID != req.UID {
		return nil, fmt.Errorf("%s: response for request %s, want %s", h, out.Response.UID, req.UID)
	}
	return out.Response, nil
}

// probeSpecs complete the probe objects of kinds whose CRD schema requires
// fields: kube-apiserver validates the schema before it calls a webhook, and
// virt-api relies on it (its clone admitter dereferences spec.source).
var probeSpecs = map[string]string{
	"VirtualMachineClone": `,"spec":{"source":{"apiGroup":"kubevirt.io","kind":"VirtualMachine","name":"probe"}}`,
}

// probeRequest is an AdmissionRequest of h's first rule with a minimal object of
// the kind: every path must answer it with an AdmissionReview (allowed or not).
func probeRequest(h hook, kind schema.GroupVersionKind) *admissionv1.AdmissionRequest {
	gvr := metav1.GroupVersionResource{Resource: "unknown"}
	if len(h.rule.APIGroups) > 0 && len(h.rule.APIVersions) > 0 && len(h.rule.Resources) > 0 {
		gvr = metav1.GroupVersionResource{Group: h.rule.APIGroups[0], Version: h.rule.APIVersions[0], Resource: h.rule.Resources[0]}
	}
	op := admissionv1.Create
	if len(h.rule.Operations) > 0 && h.rule.Operations[0] != admissionregistrationv1.OperationAll {
		op = admissionv1.Operation(h.rule.Operations[0])
	}
	obj := runtime.RawExtension{Raw: []byte(fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":"probe","namespace":"default"}%s}`,
		kind.GroupVersion().String(), kind.Kind, probeSpecs[kind.Kind]))}
	req := &admissionv1.AdmissionRequest{
		Kind: metav1.GroupVersionKind{Group: kind.Group, Version: kind.Version, Kind: kind.Kind}, Resource: gvr,
		Name: "probe", Namespace: "default", Operation: op,
	}
	switch op {
	case admissionv1.Delete:
		req.OldObject = obj
	case admissionv1.Update:
		req.Object, req.OldObject = obj, obj
	default:
		req.Object = obj
	}
	return req
}

// mutated applies a mutating webhook's JSON patch to raw.
func mutated(raw []byte, resp *admissionv1.AdmissionResponse) ([]byte, error) {
	if len(resp.Patch) == 0 {
		return raw, nil
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		return nil, fmt.Errorf("patch type %v", resp.PatchType)
	}
	p, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		return nil, err
	}
	return p.Apply(raw)
}
