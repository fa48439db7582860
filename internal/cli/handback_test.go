package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/operator"
	"github.com/virt-operator/virt-operator/internal/strategy"
	"github.com/virt-operator/virt-operator/internal/strategy/trust"
)

// A hand-back leaves upstream's operator nothing of this one's to keep stale:
// its conditions, status fields, annotations and strategy ConfigMaps go;
// upstream's stay. Refused while this operator still runs.
func TestHandback(t *testing.T) {
	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt",
		Annotations: map[string]string{"kubevirt.io/virt-operator-skip-preflight": "all", "team": "platform"}},
		Status: v1.KubeVirtStatus{Phase: v1.KubeVirtPhaseDeployed, ObservedDeploymentID: "ours", TargetDeploymentID: "ours", ObservedKubeVirtVersion: "v1.9.0",
			Conditions: []v1.KubeVirtCondition{{Type: v1.KubeVirtConditionAvailable, Status: "True"}, {Type: v1.KubeVirtConditionReady, Status: "True"},
				{Type: v1.KubeVirtConditionDataRetained, Status: "True"}},
			HandlerRollout: &v1.HandlerRolloutStatus{Phase: "Successful"}, History: []v1.DeploymentRecord{{DeploymentID: "ours"}},
			InstallStrategies: []v1.InstallStrategyRef{{DeploymentID: "ours"}}}}
	strategyCM := func(name string, ours bool) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: name, Labels: map[string]string{metadata.InstallStrategyLabel: ""},
			Annotations: map[string]string{}}}
		if ours {
			cm.Annotations[strategy.MonitorNamespaceAnnotation] = ""
		}
		return cm
	}
	running := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "virt-operator"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}}
	delegated := strategyCM("delegated", false) // dumped by a release's own operator for this operator's ID
	delegated.Annotations[metadata.InstallStrategyIdentifierAnnotation] = "ours"
	policy, binding := trust.WriterPolicy("kubevirt", "virt-operator-strategy-dumper")
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(kv, running, strategyCM("ours", true), strategyCM("upstreams", false), delegated, policy, binding).
		WithStatusSubresource(&v1.KubeVirt{}).Build()
	ctx := context.Background()
	var out bytes.Buffer
	if err := handback(ctx, c, handbackOptions{namespace: "kubevirt"}, &out); err == nil || !strings.Contains(err.Error(), "scale it to 0") {
		t.Fatalf("with the operator running: %v", err)
	}
	running.Spec.Replicas = ptr.To[int32](0)
	if err := c.Update(ctx, running); err != nil {
		t.Fatal(err)
	}
	if err := handback(ctx, c, handbackOptions{namespace: "kubevirt"}, &out); err != nil {
		t.Fatal(err)
	}
	got := &v1.KubeVirt{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(kv), got); err != nil {
		t.Fatal(err)
	}
	st := got.Status
	if len(st.Conditions) != 1 || st.Conditions[0].Type != v1.KubeVirtConditionAvailable || st.HandlerRollout != nil || st.History != nil ||
		st.InstallStrategies != nil || st.ObservedDeploymentID != "ours" {
		t.Fatalf("status after hand-back: %+v", st)
	}
	if _, left := got.Annotations["kubevirt.io/virt-operator-skip-preflight"]; left || got.Annotations["team"] != "platform" {
		t.Fatalf("annotations %v", got.Annotations)
	}
	for _, name := range []string{"ours", "delegated"} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: "kubevirt", Name: name}, &corev1.ConfigMap{}); err == nil {
			t.Fatalf("this operator's strategy ConfigMap %s is still there", name)
		}
	}
	for _, o := range []client.Object{policy, binding} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err == nil {
			t.Fatalf("the writer policy %T is still there: it would refuse upstream's strategy", o)
		}
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "kubevirt", Name: "upstreams"}, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("upstream's strategy ConfigMap was deleted: %v", err)
	}
}

// certificateObjects are certificate Secrets and CA ConfigMaps as this
// operator leaves them (its deployment ID, its content hash, the duration as
// upstream writes it), and objects that are neither.
func certificateObjects() []client.Object {
	ours := func() map[string]string {
		return map[string]string{"kubevirt.io/install-strategy-identifier": "ours", "kubevirt.io/install-strategy-version": "v1.9.0",
			"kubevirt.io/install-strategy-registry": "quay.io/kubevirt", "kubevirt.io/virt-operator-desired-hash": "h",
			"kubevirt.io/duration": "&Duration{Duration:168h0m0s,}"}
	}
	labels := func() map[string]string {
		return map[string]string{"app.kubernetes.io/managed-by": "virt-operator", "app.kubernetes.io/component": "kubevirt"}
	}
	secret := func(name string, typ corev1.SecretType) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: name, Labels: labels(), Annotations: ours()}, Type: typ,
			Data: map[string][]byte{"tls.crt": []byte("crt"), "tls.key": []byte("key")}}
	}
	configMap := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: name, Labels: labels(), Annotations: ours()},
			Data: map[string]string{"ca-bundle": "bundle"}}
	}
	return []client.Object{
		secret("kubevirt-ca", corev1.SecretTypeTLS), secret("kubevirt-virt-api-certs", corev1.SecretTypeTLS),
		secret("kubevirt-virt-handler-certs", corev1.SecretTypeTLS), configMap("kubevirt-ca"), configMap("kubevirt-external-ca"),
		secret("user-tls", corev1.SecretTypeTLS), secret("kubevirt-virt-api-certs-backup", corev1.SecretTypeOpaque), configMap("user-config"),
	}
}

// upstreamWouldPatch says whether upstream's operator finds obj's metadata
// other than it requires (its EnsureObjectMeta: each required label and
// annotation present with its value; other keys do not count), and so
// patches it, dropping the duration annotation, and reissues it next pass.
// required is written out from upstream's rules, not from the code tested.
func upstreamWouldPatch(obj client.Object, id, generation string) []string {
	labels := map[string]string{"app.kubernetes.io/managed-by": "virt-operator", "app.kubernetes.io/component": "kubevirt"}
	annotations := map[string]string{"kubevirt.io/install-strategy-identifier": id, "kubevirt.io/install-strategy-version": "v1.9.0",
		"kubevirt.io/install-strategy-registry": "quay.io/kubevirt", "kubevirt.io/generation": generation}
	if _, ok := obj.(*corev1.Secret); ok {
		annotations["kubevirt.io/customizer-identifier"] = "bf21a9e8fbc5a3846fb05b4fa0859e0917b2202f"
	}
	var differ []string
	for k, v := range labels {
		if obj.GetLabels()[k] != v {
			differ = append(differ, "label "+k)
		}
	}
	for k, v := range annotations {
		if got, ok := obj.GetAnnotations()[k]; !ok || got != v {
			differ = append(differ, "annotation "+k+"="+got)
		}
	}
	return differ
}

// The ID upstream's v1.9.0 operator computes for spec {imageTag: v1.9.0} in
// namespace kubevirt (deployid's fixtures; seen live in the take-over test).
const upstreamV190ID = "26d9c18701d6b1d6d39b6ef1473a28e3db8f806e"

func handbackKubeVirt() *v1.KubeVirt {
	return &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "kubevirt", Generation: 4},
		Spec: v1.KubeVirtSpec{ImageTag: "v1.9.0"},
		Status: v1.KubeVirtStatus{Phase: v1.KubeVirtPhaseDeployed, ObservedDeploymentID: "ours", TargetDeploymentID: "ours",
			ObservedKubeVirtVersion: "v1.9.0", ObservedKubeVirtRegistry: "quay.io/kubevirt", TargetKubeVirtVersion: "v1.9.0",
			HandlerRollout: &v1.HandlerRolloutStatus{Phase: "Successful"}}}
}

func handbackClient(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) client.Client {
	t.Helper()
	scheme, err := operator.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&v1.KubeVirt{}).Build(), funcs)
}

// resourceVersions of objs as the client has them now.
func resourceVersions(t *testing.T, c client.Client, objs []client.Object) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range objs {
		live := o.DeepCopyObject().(client.Object)
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(o), live); err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("%T %s", o, o.GetName())] = live.GetResourceVersion()
	}
	return out
}

// The hand-back stamps every certificate Secret and CA ConfigMap as upstream's
// v1.9.0 operator requires them for the CR (its ID, version, registry, the
// CR's generation, its customizer identifier on Secrets), so that it finds
// nothing to patch; the duration annotation stays and this operator's own
// go. Nothing else is touched; the CR records the API versions upstream's
// operator looks for. A second hand-back writes nothing.
func TestHandbackStampsCertificatesForUpstream(t *testing.T) {
	objs := append(certificateObjects(), handbackKubeVirt())
	c := handbackClient(t, interceptor.Funcs{}, objs...)
	ctx := context.Background()
	var out bytes.Buffer
	if err := handback(ctx, c, handbackOptions{namespace: "kubevirt"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"VIRT_OPERATOR_IMAGE=quay.io/kubevirt/virt-operator:v1.9.0, as its release manifest sets it",
		"upstream's v1.9.0 operator will target deployment " + upstreamV190ID + " (v1.9.0 from quay.io/kubevirt, generation 4)",
		"Certificates: 5 Secrets and CA ConfigMaps stamped for upstream's deployment " + upstreamV190ID + " (0 already were)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, o := range objs[:5] {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		if differ := upstreamWouldPatch(o, upstreamV190ID, "4"); len(differ) > 0 {
			t.Errorf("%T %s: upstream's operator would patch it (%v), then reissue it", o, o.GetName(), differ)
		}
		ann := o.GetAnnotations()
		if ann["kubevirt.io/duration"] != "&Duration{Duration:168h0m0s,}" || ann["kubevirt.io/virt-operator-desired-hash"] != "" {
			t.Errorf("%T %s: annotations %v", o, o.GetName(), ann)
		}
	}
	for _, o := range objs[5:8] {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
		if o.GetAnnotations()["kubevirt.io/install-strategy-identifier"] != "ours" {
			t.Errorf("%T %s is no certificate object, and was stamped", o, o.GetName())
		}
	}
	kv := &v1.KubeVirt{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "kubevirt", Name: "kubevirt"}, kv); err != nil {
		t.Fatal(err)
	}
	if kv.Annotations["kubevirt.io/latest-observed-api-version"] != "v1" || kv.Annotations["kubevirt.io/storage-observed-api-version"] != "v1" {
		t.Errorf("the CR's annotations %v: upstream's first pass would rewrite the CR", kv.Annotations)
	}

	before := resourceVersions(t, c, objs[:8])
	out.Reset()
	if err := handback(ctx, c, handbackOptions{namespace: "kubevirt"}, &out); err != nil {
		t.Fatal(err)
	}
	if after := resourceVersions(t, c, objs[:8]); !reflect.DeepEqual(before, after) || !strings.Contains(out.String(), "0 Secrets and CA ConfigMaps stamped") {
		t.Errorf("a second hand-back wrote %v -> %v:\n%s", before, after, out.String())
	}
}

// Upstream's operator reads spec.configuration.hypervisors, which this
// operator's types drop: the hand-back reads it from the CR as stored. The ID
// is the one upstream's operator computed for this spec (deployid's fixture;
// without the hypervisors it would be a1efe69d…). The fake client keeps typed
// objects, so it drops the field too; the API server keeps it (the CRD
// preserves unknown fields under configuration): the read answers as it would.
func TestHandbackReadsWhatOurTypesDrop(t *testing.T) {
	kv := handbackKubeVirt()
	kv.Spec.Configuration = v1.KubeVirtConfiguration{RoleAggregationStrategy: ptr.To(deployid.RoleAggregationManual),
		DeveloperConfiguration: &v1.DeveloperConfiguration{FeatureGates: []string{"Plugins", "VMStatsCollector", "OptOutRoleAggregation", "ConfigurableHypervisor"},
			DisabledFeatureGates: []string{"Template", "ExternalNetResourceInjection"}}}
	c := handbackClient(t, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if err := c.Get(ctx, key, obj, opts...); err != nil {
			return err
		}
		if u, ok := obj.(*unstructured.Unstructured); ok && u.GetKind() == "KubeVirt" {
			return unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": "mshv"}, map[string]any{"name": "kvm"}}, "spec", "configuration", "hypervisors")
		}
		return nil
	}}, append(certificateObjects(), kv)...)
	var out bytes.Buffer
	if err := handback(context.Background(), c, handbackOptions{namespace: "kubevirt"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "deployment 8452630a1b732445b264abf1da8b4b84bf4c3230") {
		t.Errorf("output:\n%s", out.String())
	}
}

// --env says what upstream's operator's Deployment sets: here a mirror's
// prefixed image, which moves the registry and the ID (upstream's figures).
func TestHandbackUpstreamEnvironment(t *testing.T) {
	kv := handbackKubeVirt()
	kv.Spec.ImageTag = ""
	objs := append(certificateObjects(), kv)
	c := handbackClient(t, interceptor.Funcs{}, objs...)
	var out bytes.Buffer
	o := handbackOptions{namespace: "kubevirt", env: []string{"VIRT_OPERATOR_IMAGE=registry.example.com:5000/mirror/kv-virt-operator:v1.9.0"}}
	if err := handback(context.Background(), c, o, &out); err != nil {
		t.Fatal(err)
	}
	secret := objs[0]
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(secret), secret); err != nil {
		t.Fatal(err)
	}
	if a := secret.GetAnnotations(); a["kubevirt.io/install-strategy-identifier"] != "6d562ca03e4050e2a23a9a3de613ce4995b5a05c" ||
		a["kubevirt.io/install-strategy-registry"] != "registry.example.com:5000/mirror" {
		t.Errorf("annotations %v\n%s", a, out.String())
	}
	bad := handbackOptions{namespace: "kubevirt", env: []string{"VIRT_OPERATOR_IMAGE"}, allowReissue: true}
	if err := handback(context.Background(), c, bad, &out); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), `--env "VIRT_OPERATOR_IMAGE": want NAME=VALUE`) {
		t.Errorf("a malformed --env: %v", err)
	}
}

// What the hand-back cannot stamp as upstream's operator will want it, it
// refuses before writing anything, saying why; --allow-reissue hands back all
// the same, leaves the certificates as they are and says upstream's operator
// reissues them.
func TestHandbackRefusesWhatItCannotStamp(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*v1.KubeVirt)
		env  []string
		want string
	}{
		{"a patch of every Secret", func(kv *v1.KubeVirt) {
			kv.Spec.CustomizeComponents.Patches = []v1.CustomizeComponentsPatch{{ResourceType: "*", ResourceName: "*", Type: v1.MergePatchType, Patch: "{}"}}
		}, nil, "spec.customizeComponents.patches[0] (* *) patches certificate Secrets"},
		{"a release whose operator is not known here", func(kv *v1.KubeVirt) { kv.Status.ObservedKubeVirtVersion = "v1.7.4" }, nil,
			"upstream's v1.7.4 operator is not known here"},
		{"no release deployed", func(kv *v1.KubeVirt) {
			kv.Status.ObservedKubeVirtVersion, kv.Status.TargetKubeVirtVersion = "", ""
		}, nil, "no release is deployed"},
		{"an operator image naming no release", func(*v1.KubeVirt) {}, []string{"VIRT_OPERATOR_IMAGE=quay.io/kubevirt/virt-operator:latest"},
			"names no release"},
	} {
		for _, allow := range []bool{false, true} {
			kv := handbackKubeVirt()
			tc.edit(kv)
			strategyCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kubevirt", Name: "strategy",
				Labels: map[string]string{metadata.InstallStrategyLabel: ""}, Annotations: map[string]string{strategy.MonitorNamespaceAnnotation: ""}}}
			objs := append(certificateObjects(), kv, strategyCM)
			c := handbackClient(t, interceptor.Funcs{}, objs...)
			before := resourceVersions(t, c, objs[:5])
			var out bytes.Buffer
			err := handback(context.Background(), c, handbackOptions{namespace: "kubevirt", env: tc.env, allowReissue: allow}, &out)
			after := resourceVersions(t, c, objs[:5])
			if !reflect.DeepEqual(before, after) {
				t.Errorf("%s (allow %v): certificates written", tc.name, allow)
			}
			strategyLeft := c.Get(context.Background(), client.ObjectKeyFromObject(strategyCM), &corev1.ConfigMap{}) == nil
			switch {
			case !allow && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing changed (--allow-reissue")):
				t.Errorf("%s: %v, want a refusal containing %q", tc.name, err, tc.want)
			case !allow && !strategyLeft:
				t.Errorf("%s: refused, yet this operator's strategy was deleted", tc.name)
			case allow && (err != nil || strategyLeft || !strings.Contains(out.String(), "upstream's operator reissues every one on its first pass")):
				t.Errorf("%s with --allow-reissue: %v, strategy left %v\n%s", tc.name, err, strategyLeft, out.String())
			}
		}
	}
}

// Where upstream's operator writes no certificate (no CR, two CRs, a CR being
// deleted), the certificates are left as they are, and the output says why.
func TestHandbackWithoutOneActiveKubeVirt(t *testing.T) {
	second := handbackKubeVirt()
	second.Name = "second"
	deleting := handbackKubeVirt()
	deleting.DeletionTimestamp, deleting.Finalizers = &metav1.Time{Time: time.Unix(1, 0)}, []string{"kubevirt.io/foregroundDeleteKubeVirt"}
	for _, tc := range []struct {
		kvs  []client.Object
		want string
	}{
		{nil, "no KubeVirt CR"},
		{[]client.Object{handbackKubeVirt(), second}, "2 KubeVirt CRs"},
		{[]client.Object{deleting}, "being deleted"},
	} {
		objs := certificateObjects()
		c := handbackClient(t, interceptor.Funcs{}, append(objs, tc.kvs...)...)
		before := resourceVersions(t, c, objs)
		var out bytes.Buffer
		if err := handback(context.Background(), c, handbackOptions{namespace: "kubevirt"}, &out); err != nil {
			t.Fatal(err)
		}
		if after := resourceVersions(t, c, objs); !reflect.DeepEqual(before, after) || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%q: written %v -> %v\n%s", tc.want, before, after, out.String())
		}
	}
}

// A certificate changed between the read and the write (a stale read) fails
// the write, naming it, instead of being overwritten.
func TestHandbackStaleCertificate(t *testing.T) {
	objs := append(certificateObjects(), handbackKubeVirt())
	changed := false
	c := handbackClient(t, interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if s, ok := obj.(*corev1.Secret); ok && s.Name == "kubevirt-virt-api-certs" && !changed {
			changed = true
			live := &corev1.Secret{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(s), live); err != nil {
				return err
			}
			live.Data["tls.crt"] = []byte("reissued meanwhile")
			if err := c.Update(ctx, live); err != nil {
				return err
			}
		}
		return c.Patch(ctx, obj, patch, opts...)
	}}, objs...)
	err := handback(context.Background(), c, handbackOptions{namespace: "kubevirt"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "kubevirt-virt-api-certs") || !apierrors.IsConflict(errors.Unwrap(err)) {
		t.Fatalf("a certificate changed since read: %v", err)
	}
	live := &corev1.Secret{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "kubevirt", Name: "kubevirt-virt-api-certs"}, live); err != nil {
		t.Fatal(err)
	}
	if string(live.Data["tls.crt"]) != "reissued meanwhile" || live.Annotations["kubevirt.io/install-strategy-identifier"] != "ours" {
		t.Errorf("overwritten: %v %s", live.Annotations, live.Data["tls.crt"])
	}
}
