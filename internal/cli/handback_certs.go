package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/virt-operator/virt-operator/api/v1"
	"github.com/virt-operator/virt-operator/internal/apply"
	"github.com/virt-operator/virt-operator/internal/certs"
	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

// Upstream's operator checks the metadata of every certificate Secret and CA
// ConfigMap on each pass: where a label or annotation it requires differs, it
// patches the object with its own annotations as the whole annotation map.
// That drops kubevirt.io/duration, and its next pass, finding the duration
// missing, reissues the certificate. So the hand-back stamps these objects
// as upstream's operator will: then it finds nothing to patch and reissues
// nothing.

// apiVersionObserved is upstream's value of the CR's API-version annotations.
// Where they are missing its first pass rewrites the CR in its own types,
// which drops this operator's spec fields and so bumps the generation that
// every certificate is stamped with.
const apiVersionObserved = "v1"

// certificateStamps are the labels and annotations upstream's operator
// requires on the certificate objects of one KubeVirt CR; other keys it
// leaves alone.
type certificateStamps struct {
	target deployid.UpstreamTarget
	labels map[string]string
	// annotations are both kinds'; secretAnnotations the Secrets' only.
	annotations, secretAnnotations map[string]string
}

// upstreamCertificateStamps are the stamps upstream's operator, with the
// environment env, requires for kv: its operator labels, its target (version,
// registry, ID), kv's generation, and on Secrets, which it customizes, the
// hash of spec.customizeComponents as written. It refuses, naming them, a
// customizeComponents patch that reaches a certificate Secret, whose result
// the hand-back cannot tell.
func upstreamCertificateStamps(kv *v1.KubeVirt, hypervisors []string, env deployid.Env) (certificateStamps, error) {
	if patches := certificateSecretPatches(kv.Spec.CustomizeComponents, kv.Namespace); len(patches) > 0 {
		return certificateStamps{}, fmt.Errorf("%s patches certificate Secrets, and what upstream's operator makes of them is not computed here", strings.Join(patches, ", "))
	}
	target, err := deployid.UpstreamTargetOf(kv, hypervisors, env)
	if err != nil {
		return certificateStamps{}, err
	}
	customizer, err := apply.CustomizerHash(&kv.Spec.CustomizeComponents)
	if err != nil {
		return certificateStamps{}, err
	}
	labels := map[string]string{metadata.ManagedByLabel: metadata.ManagedByValue, metadata.AppComponentLabel: metadata.DefaultAppComponent}
	if validLabel(kv.Spec.ProductComponent) {
		labels[metadata.AppComponentLabel] = kv.Spec.ProductComponent
	}
	if validLabel(kv.Spec.ProductVersion) {
		labels[metadata.AppVersionLabel] = kv.Spec.ProductVersion
	}
	if validLabel(kv.Spec.ProductName) {
		labels[metadata.AppPartOfLabel] = kv.Spec.ProductName
	}
	return certificateStamps{
		target: target,
		labels: labels,
		annotations: map[string]string{
			metadata.InstallStrategyVersionAnnotation:    target.Version,
			metadata.InstallStrategyRegistryAnnotation:   target.Registry,
			metadata.InstallStrategyIdentifierAnnotation: target.ID,
			metadata.GenerationAnnotation:                strconv.FormatInt(kv.Generation, 10),
		},
		secretAnnotations: map[string]string{metadata.CustomizerIdentifierAnnotation: customizer},
	}, nil
}

// validLabel: upstream sets a product label only to a non-empty valid value.
func validLabel(v string) bool { return v != "" && len(validation.IsValidLabelValue(v)) == 0 }

// certificateSecretPatches names the customizeComponents patches upstream's
// operator applies to a certificate Secret (kind and name matched as it
// matches them: "*", or equal but for case).
func certificateSecretPatches(cc v1.CustomizeComponents, namespace string) []string {
	var out []string
	for i, p := range cc.Patches {
		kindMatches := p.ResourceType == "*" || strings.EqualFold(p.ResourceType, "Secret")
		_, certificate := certs.ProfileFor(strings.ToLower(p.ResourceName), namespace)
		if kindMatches && (p.ResourceName == "*" || certificate) {
			out = append(out, fmt.Sprintf("spec.customizeComponents.patches[%d] (%s %s)", i, p.ResourceType, p.ResourceName))
		}
	}
	return out
}

// restamp sets obj's labels and annotations to s, keeping every other key but
// this operator's own annotations, and reports whether anything changed.
func (s certificateStamps) restamp(obj metav1.Object, secret bool) bool {
	labels, annotations := copyStrings(obj.GetLabels()), copyStrings(obj.GetAnnotations())
	changed := false
	set := func(m map[string]string, want map[string]string) {
		for k, v := range want {
			if old, ok := m[k]; !ok || old != v {
				m[k], changed = v, true
			}
		}
	}
	set(labels, s.labels)
	set(annotations, s.annotations)
	if secret {
		set(annotations, s.secretAnnotations)
	}
	for k := range annotations {
		if strings.HasPrefix(k, ourAnnotationPrefix) {
			delete(annotations, k)
			changed = true
		}
	}
	obj.SetLabels(labels)
	obj.SetAnnotations(annotations)
	return changed
}

func copyStrings(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// defaultUpstreamEnv is the environment upstream's release manifest gives its
// operator for the release kv runs: its image, from the registry kv's
// images come from. Nothing else of it shapes the ID.
func defaultUpstreamEnv(kv *v1.KubeVirt) (deployid.MapEnv, error) {
	version, registry := kv.Status.ObservedKubeVirtVersion, kv.Status.ObservedKubeVirtRegistry
	if version == "" {
		version, registry = kv.Status.TargetKubeVirtVersion, kv.Status.TargetKubeVirtRegistry
	}
	if version == "" {
		return nil, errors.New("no release is deployed, so which operator takes it back is not known: name its image with --env VIRT_OPERATOR_IMAGE=IMAGE")
	}
	if registry == "" {
		registry = deployid.DefaultRegistry
	}
	return deployid.MapEnv{deployid.EnvVirtOperatorImage: registry + "/virt-operator:" + version}, nil
}

// planCertificateStamps decides the stamps of the certificate objects: those
// upstream's operator will require for the namespace's one KubeVirt, or none
// where it writes no certificate. Where they cannot be computed it refuses,
// or with allowReissue says so and stamps nothing.
func planCertificateStamps(ctx context.Context, c client.Client, o handbackOptions, kvs []v1.KubeVirt, out io.Writer) (*certificateStamps, error) {
	env, err := operatorEnv(deployid.MapEnv{}, o.env)
	if err != nil {
		return nil, UsageError(err)
	}
	switch {
	case len(kvs) == 0:
		_, _ = fmt.Fprintln(out, "Certificates: no KubeVirt CR, so upstream's operator writes none; left as they are")
		return nil, nil
	case len(kvs) > 1:
		_, _ = fmt.Fprintf(out, "Certificates: %d KubeVirt CRs, so upstream's operator acts on none; left as they are\n", len(kvs))
		return nil, nil
	case kvs[0].DeletionTimestamp != nil:
		_, _ = fmt.Fprintln(out, "Certificates: the KubeVirt CR is being deleted, so upstream's operator writes none; left as they are")
		return nil, nil
	}
	kv := &kvs[0]
	stamps, err := stampsFor(ctx, c, kv, env, out)
	if err != nil {
		if !o.allowReissue {
			return nil, fmt.Errorf("the certificates cannot be stamped as upstream's operator will want them, so it would reissue every one: %w; nothing changed (--allow-reissue hands back all the same)", err)
		}
		_, _ = fmt.Fprintf(out, "Certificates: left as they are (%v); upstream's operator reissues every one on its first pass\n", err)
		return nil, nil
	}
	t := stamps.target
	_, _ = fmt.Fprintf(out, "KubeVirt %s/%s: upstream's %s operator will target deployment %s (%s from %s, generation %d)\n",
		kv.Namespace, kv.Name, t.OperatorRelease, t.ID, t.Version, t.Registry, kv.Generation)
	return &stamps, nil
}

// stampsFor computes kv's stamps for upstream's operator in env, with its
// image as the release manifest sets it where env does not name one.
func stampsFor(ctx context.Context, c client.Client, kv *v1.KubeVirt, env deployid.MapEnv, out io.Writer) (certificateStamps, error) {
	_, image := env[deployid.EnvVirtOperatorImage]
	_, oldImage := env[deployid.EnvOperatorImage]
	if !image && !oldImage {
		def, err := defaultUpstreamEnv(kv)
		if err != nil {
			return certificateStamps{}, err
		}
		env[deployid.EnvVirtOperatorImage] = def[deployid.EnvVirtOperatorImage]
		_, _ = fmt.Fprintf(out, "Upstream's operator: %s=%s, as its release manifest sets it (--env if its Deployment sets otherwise)\n",
			deployid.EnvVirtOperatorImage, env[deployid.EnvVirtOperatorImage])
	}
	hypervisors, err := hypervisorNames(ctx, c, kv)
	if err != nil {
		return certificateStamps{}, err
	}
	return upstreamCertificateStamps(kv, hypervisors, env)
}

// hypervisorNames are the names in kv's spec.configuration.hypervisors, which
// upstream's operator reads and this operator's API does not carry.
func hypervisorNames(ctx context.Context, c client.Client, kv *v1.KubeVirt) ([]string, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1.GroupVersion.WithKind("KubeVirt"))
	if err := c.Get(ctx, client.ObjectKeyFromObject(kv), u); err != nil {
		return nil, fmt.Errorf("reading KubeVirt %s: %w", kv.Name, err)
	}
	list, _, err := unstructured.NestedSlice(u.Object, "spec", "configuration", "hypervisors")
	if err != nil {
		return nil, fmt.Errorf("KubeVirt %s: spec.configuration.hypervisors: %w", kv.Name, err)
	}
	var names []string
	for _, h := range list {
		entry, _ := h.(map[string]any)
		name, _ := entry["name"].(string)
		names = append(names, name)
	}
	return names, nil
}

// stampCertificates writes stamps on every certificate Secret and CA
// ConfigMap of namespace that lacks them, each as read (a concurrent change
// fails the write instead of being overwritten).
func stampCertificates(ctx context.Context, c client.Client, namespace string, stamps certificateStamps, out io.Writer) error {
	secrets := &corev1.SecretList{}
	configMaps := &corev1.ConfigMapList{}
	for _, l := range []client.ObjectList{secrets, configMaps} {
		if err := c.List(ctx, l, client.InNamespace(namespace)); err != nil {
			return err
		}
	}
	var objects []client.Object
	for i := range secrets.Items {
		s := &secrets.Items[i]
		if _, ok := certs.ProfileFor(s.Name, s.Namespace); ok && s.Type == corev1.SecretTypeTLS && s.DeletionTimestamp == nil {
			objects = append(objects, s)
		}
	}
	for i := range configMaps.Items {
		if cm := &configMaps.Items[i]; certs.IsBundleName(cm.Name) && cm.DeletionTimestamp == nil {
			objects = append(objects, cm)
		}
	}
	written := 0
	for _, obj := range objects {
		base := obj.DeepCopyObject().(client.Object)
		_, secret := obj.(*corev1.Secret)
		if !stamps.restamp(obj, secret) {
			continue
		}
		if err := c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("stamping %T %s for upstream's operator: %w", obj, obj.GetName(), err)
		}
		written++
	}
	_, _ = fmt.Fprintf(out, "Certificates: %d Secrets and CA ConfigMaps stamped for upstream's deployment %s (%d already were): its operator reissues none\n",
		written, stamps.target.ID, len(objects)-written)
	return nil
}
