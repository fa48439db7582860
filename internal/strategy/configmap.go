package strategy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
)

// The install-strategy ConfigMap format (upstream §3.3), plus one annotation of ours.
const (
	// ConfigMapGenerateName prefixes every install-strategy ConfigMap's name.
	ConfigMapGenerateName = "kubevirt-install-strategy-"
	// ManifestsKey is the data key holding the payload.
	ManifestsKey = "manifests"

	// MonitorNamespaceAnnotation records the monitoring namespace the strategy was
	// generated with ("" when no Prometheus ServiceAccount was found). Upstream has
	// no such annotation: it is what lets the operator see that a cached strategy
	// was generated before monitoring appeared (or after it went) and regenerate it.
	MonitorNamespaceAnnotation = "kubevirt.io/install-strategy-monitoring-namespace"

	// MaxEncodedSize is the largest data.manifests Encode writes: a ConfigMap holds
	// at most 1 MiB, and the metadata and the API server's overhead need the rest.
	MaxEncodedSize = 900 * 1024

	// maxDecodedSize bounds the decompressed payload so a hostile ConfigMap cannot
	// exhaust memory (the default strategy is a few MiB of YAML).
	maxDecodedSize = 64 << 20
)

var (
	// ErrCorrupt marks a strategy ConfigMap that can never be decoded: bad base64,
	// gzip or YAML, an unknown kind, no objects. The operator deletes such a
	// ConfigMap and generates the strategy again.
	ErrCorrupt = errors.New("corrupt install strategy")
	// ErrTooLarge is returned by Encode when the encoded payload exceeds MaxEncodedSize.
	ErrTooLarge = errors.New("install strategy too large")
)

// scheme knows every typed kind a strategy holds; it maps Go types to their
// apiVersion/kind when encoding and back when decoding. Registering a whole group
// also registers kinds a strategy cannot hold (Pod, lists, options); Decode rejects
// those through Strategy.Add.
var scheme = newScheme()

// schemeBuilder registers every typed kind a strategy can hold.
var schemeBuilder = runtime.NewSchemeBuilder(
	corev1.AddToScheme,
	appsv1.AddToScheme,
	rbacv1.AddToScheme,
	admissionregistrationv1.AddToScheme,
	apiextensionsv1.AddToScheme,
	apiregistrationv1.AddToScheme,
	monitoringv1.AddToScheme,
)

// AddToScheme registers every typed kind a strategy can hold.
var AddToScheme = schemeBuilder.AddToScheme

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		panic(fmt.Sprintf("strategy: building the scheme: %v", err)) // static registrations; cannot fail
	}
	return s
}

// Encode returns the install-strategy ConfigMap for s, generated for cfg with the
// given monitoring namespace ("" for none). The ConfigMap has a generateName, so
// each create makes a new one; the caller checks the cache first (FindForID, Fresh).
// A payload over MaxEncodedSize is refused with ErrTooLarge, before anything is
// written.
func Encode(s *Strategy, cfg *deployid.Config, monitorNamespace string) (*corev1.ConfigMap, error) {
	if cfg == nil || cfg.ID == "" {
		return nil, errors.New("encoding the install strategy: the deployment config has no id")
	}
	manifests, err := Manifests(s)
	if err != nil {
		return nil, err
	}
	payload, err := compress(manifests)
	if err != nil {
		return nil, err
	}
	if len(payload) > MaxEncodedSize {
		return nil, fmt.Errorf("%w: the encoded payload is %d bytes (%.1f KiB, from %d bytes of YAML), over the %d KiB limit",
			ErrTooLarge, len(payload), float64(len(payload))/1024, len(manifests), MaxEncodedSize/1024)
	}
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: ConfigMapGenerateName,
			Namespace:    cfg.Namespace,
			Labels: map[string]string{
				metadata.ManagedByLabel:       metadata.ManagedByValue,
				metadata.InstallStrategyLabel: "",
			},
			Annotations: map[string]string{
				metadata.InstallStrategyVersionAnnotation:           cfg.KubeVirtVersion,
				metadata.InstallStrategyRegistryAnnotation:          cfg.Registry,
				metadata.InstallStrategyIdentifierAnnotation:        cfg.ID,
				metadata.InstallStrategyConfigMapEncodingAnnotation: metadata.InstallStrategyConfigMapEncodingGzipBase64,
				MonitorNamespaceAnnotation:                          monitorNamespace,
			},
		},
		Data: map[string]string{ManifestsKey: payload},
	}, nil
}

// Manifests renders s as multi-document YAML, one document per object in
// Objects() order, each with apiVersion and kind and without status or
// metadata.creationTimestamp. An empty strategy is an error: its payload would
// not decode.
func Manifests(s *Strategy) ([]byte, error) {
	var buf bytes.Buffer
	if err := WriteManifests(&buf, s); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteManifests writes Manifests(s) to w one document at a time, holding
// no more than one object's YAML.
func WriteManifests(w io.Writer, s *Strategy) error {
	if s == nil {
		return errors.New("encoding the install strategy: no strategy")
	}
	objs := s.Objects()
	if len(objs) == 0 {
		return errors.New("encoding the install strategy: the strategy holds no objects")
	}
	for _, obj := range objs {
		doc, err := marshalObject(obj)
		if err != nil {
			return fmt.Errorf("encoding the install strategy: %w", err)
		}
		if _, err := io.WriteString(w, "---\n"); err != nil {
			return err
		}
		if _, err := w.Write(doc); err != nil {
			return err
		}
	}
	return nil
}

// ManifestsDigest is the SHA-256 of Manifests(s), without holding them: two
// strategies render the same manifests exactly when their digests are equal.
func ManifestsDigest(s *Strategy) ([sha256.Size]byte, error) {
	h := sha256.New()
	if err := WriteManifests(h, s); err != nil {
		return [sha256.Size]byte{}, err
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum, nil
}

// marshalObject is one YAML document for obj. It never modifies obj.
func marshalObject(obj client.Object) ([]byte, error) {
	gvk, err := kindOf(obj)
	if err != nil {
		return nil, err
	}
	var content map[string]any
	if u, ok := obj.(*unstructured.Unstructured); ok {
		content = runtime.DeepCopyJSON(u.Object)
	} else if content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	content["apiVersion"], content["kind"] = gvk.GroupVersion().String(), gvk.Kind
	delete(content, "status")
	if meta, ok := content["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	doc, err := yaml.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
	}
	return doc, nil
}

// kindOf is obj's apiVersion/kind: from the scheme for typed objects (so a
// generator that leaves TypeMeta empty still encodes), from the object itself for
// unstructured ones.
func kindOf(obj client.Object) (schema.GroupVersionKind, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		gvk := u.GroupVersionKind()
		if gvk.Kind == "" || gvk.Version == "" {
			return gvk, fmt.Errorf("%s: an unstructured object needs apiVersion and kind", u.GetName())
		}
		return gvk, nil
	}
	gvks, _, err := scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, fmt.Errorf("%T %s: not a kind an install strategy holds", obj, obj.GetName())
	}
	return gvks[0], nil
}

// compress is base64(gzip(data)).
func compress(data []byte) (string, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return "", err
	}
	if _, err := zw.Write(data); err != nil {
		return "", fmt.Errorf("compressing the install strategy: %w", err)
	}
	if err := zw.Close(); err != nil {
		return "", fmt.Errorf("compressing the install strategy: %w", err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// Decode reads the strategy stored in cm: the gzip+base64 payload when the
// encoding annotation is present (as upstream, an empty value means gzip+base64
// too), else plain multi-document YAML. Every document becomes its typed object.
// Any error that a retry cannot fix wraps ErrCorrupt and names the ConfigMap and
// what is wrong.
func Decode(cm *corev1.ConfigMap) (*Strategy, error) {
	if cm == nil {
		return nil, fmt.Errorf("%w: no ConfigMap", ErrCorrupt)
	}
	name := cm.Namespace + "/" + cm.Name
	raw, ok := cm.Data[ManifestsKey]
	if !ok {
		return nil, fmt.Errorf("install strategy configmap %s: %w: no %q key", name, ErrCorrupt, ManifestsKey)
	}
	data := []byte(raw)
	if enc, encoded := cm.Annotations[metadata.InstallStrategyConfigMapEncodingAnnotation]; encoded {
		if enc != "" && enc != metadata.InstallStrategyConfigMapEncodingGzipBase64 {
			return nil, fmt.Errorf("install strategy configmap %s: %w: unknown encoding %q (want %q)",
				name, ErrCorrupt, enc, metadata.InstallStrategyConfigMapEncodingGzipBase64)
		}
		var err error
		if data, err = decompress(raw); err != nil {
			return nil, fmt.Errorf("install strategy configmap %s: %w", name, err)
		}
	}
	s, err := ParseManifests(data)
	if err != nil {
		return nil, fmt.Errorf("install strategy configmap %s: %w", name, err)
	}
	return s, nil
}

// decompress undoes compress; its errors wrap ErrCorrupt.
func decompress(payload string) ([]byte, error) {
	zipped, err := base64.StdEncoding.DecodeString(strings.TrimSpace(payload))
	if err != nil {
		return nil, fmt.Errorf("%w: bad base64: %w", ErrCorrupt, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	if err != nil {
		return nil, fmt.Errorf("%w: bad gzip: %w", ErrCorrupt, err)
	}
	defer func() { _ = zr.Close() }()
	data, err := io.ReadAll(io.LimitReader(zr, maxDecodedSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: bad gzip: %w", ErrCorrupt, err)
	}
	if len(data) > maxDecodedSize {
		return nil, fmt.Errorf("%w: the payload decompresses to more than %d MiB", ErrCorrupt, maxDecodedSize>>20)
	}
	return data, nil
}

// ParseManifests reads multi-document YAML (as Manifests writes it, or any
// release's own dump) into a Strategy. A payload with no object at all is corrupt.
// Errors wrap ErrCorrupt.
func ParseManifests(data []byte) (*Strategy, error) {
	objs, err := ParseObjects(data)
	if err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("%w: the payload holds no objects", ErrCorrupt)
	}
	s := &Strategy{}
	seen := map[ObjectRef]bool{}
	for _, obj := range objs {
		// Upstream lists its CA ConfigMaps twice; the first of a name counts.
		ref := ObjectRef{Kind: obj.GetObjectKind().GroupVersionKind().Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
		if seen[ref] {
			continue
		}
		seen[ref] = true
		if err := s.Add(obj); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
	}
	return s, nil
}

// ParseObjects reads multi-document YAML into objects, in order: the typed object
// for every kind the scheme knows, unstructured for the others. Documents are
// separated by "---" lines; empty documents are skipped. Errors wrap ErrCorrupt
// and name the document.
func ParseObjects(data []byte) ([]client.Object, error) {
	var out []client.Object
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		chunk, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: bad YAML in document %d: %w", ErrCorrupt, doc, err)
		}
		obj, err := parseObject(chunk)
		if err != nil {
			return nil, fmt.Errorf("%w: document %d: %w", ErrCorrupt, doc, err)
		}
		if obj != nil {
			out = append(out, obj)
		}
	}
}

// parseObject decodes one YAML document into its typed object (unstructured for a
// kind the scheme does not know), or nil for an empty document.
func parseObject(doc []byte) (client.Object, error) {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("bad YAML: %w", err)
	}
	if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	var tm metav1.TypeMeta
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &tm); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	if tm.Kind == "" || tm.APIVersion == "" {
		return nil, fmt.Errorf("not a Kubernetes object: apiVersion and kind are required (got apiVersion %q, kind %q)", tm.APIVersion, tm.Kind)
	}
	gvk := tm.GroupVersionKind()
	if listed, ok := listKinds[tm.Kind]; ok {
		// As upstream's loader, a kind a strategy has a list for is read by its kind:
		// upstream's own generator writes some with a wrong apiVersion (the node
		// restriction policy as "v1", the ServiceMonitor as "monitoring.coreos.com").
		gvk = listed
	}
	ro, err := scheme.New(gvk)
	obj, typed := ro.(client.Object)
	if err != nil || !typed {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("%s: %w", tm.Kind, err)
		}
		if u.GetName() == "" {
			return nil, fmt.Errorf("%s %s has no name", tm.APIVersion, tm.Kind)
		}
		u.SetGroupVersionKind(gvk)
		return u, nil
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, obj); err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

// StrategyMeta is what a strategy ConfigMap's labels and annotations say about it.
type StrategyMeta struct {
	ID       string
	Version  string
	Registry string
	// MonitorNamespace is the monitoring namespace the strategy was generated with;
	// "" for none.
	MonitorNamespace string
	// MonitorRecorded is false when the ConfigMap has no MonitorNamespaceAnnotation
	// (written by upstream or an older operator): its monitoring answer is unknown.
	MonitorRecorded bool
}

// Meta reads cm's strategy metadata. The bool is false when cm is not an
// install-strategy ConfigMap (no kubevirt.io/install-strategy label).
func Meta(cm *corev1.ConfigMap) (StrategyMeta, bool) {
	if !IsStrategyConfigMap(cm) {
		return StrategyMeta{}, false
	}
	a := cm.Annotations
	mon, recorded := a[MonitorNamespaceAnnotation]
	return StrategyMeta{
		ID:               a[metadata.InstallStrategyIdentifierAnnotation],
		Version:          a[metadata.InstallStrategyVersionAnnotation],
		Registry:         a[metadata.InstallStrategyRegistryAnnotation],
		MonitorNamespace: mon,
		MonitorRecorded:  recorded,
	}, true
}

// IsStrategyConfigMap reports whether cm carries the install-strategy label.
func IsStrategyConfigMap(cm *corev1.ConfigMap) bool {
	if cm == nil {
		return false
	}
	_, ok := cm.Labels[metadata.InstallStrategyLabel]
	return ok
}

// Digest is the SHA-256 (hex) of a strategy ConfigMap's payload: what the
// operator records of a ConfigMap it accepted, so an edit of it is seen.
func Digest(cm *corev1.ConfigMap) string {
	sum := sha256.Sum256([]byte(cm.Data[ManifestsKey]))
	return hex.EncodeToString(sum[:])
}
