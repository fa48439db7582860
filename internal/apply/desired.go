package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/deployid"
	"github.com/virt-operator/virt-operator/internal/metadata"
	"github.com/virt-operator/virt-operator/internal/strategy"
)

// DesiredHashAnnotation carries Hash of the desired object on every object the
// operator writes. A live object with another value (or none) needs a write.
const DesiredHashAnnotation = "kubevirt.io/virt-operator-desired-hash"

// ObjectRef names one object: kind, namespace ("" when cluster-scoped) and name.
type ObjectRef = strategy.ObjectRef

// Desired stamps a customized strategy (Customize's output, with certificates
// and served kinds settled) with the operator's labels and install-strategy
// annotations, on every object and on the pod templates of Deployments and
// DaemonSets. It is the last step before Plan; customization is Customize's alone,
// so it is never applied twice. It modifies and returns s.
func Desired(s *strategy.Strategy, cfg *deployid.Config) *strategy.Strategy {
	for _, o := range s.Objects() {
		metadata.Inject(o, cfg)
		if tmpl := PodTemplate(o); tmpl != nil {
			metadata.InjectPodTemplate(tmpl, cfg)
			stampTemplateHash(o)
		}
	}
	return s
}

// Hash is a stable digest of obj as we would write it: its canonical JSON
// without status, TypeMeta, server-set metadata and DesiredHashAnnotation itself.
func Hash(obj client.Object) (string, error) {
	if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
		return hashCRD(crd)
	}
	m, err := contentOf(obj)
	if err != nil {
		return "", fmt.Errorf("hashing %s: %w", RefOf(obj), err)
	}
	delete(m, "status")
	delete(m, "apiVersion")
	delete(m, "kind")
	if meta, ok := m["metadata"].(map[string]any); ok {
		for _, k := range []string{"creationTimestamp", "resourceVersion", "uid", "generation", "managedFields", "selfLink", "deletionTimestamp"} {
			delete(meta, k)
		}
		if ann, ok := meta["annotations"].(map[string]any); ok {
			delete(ann, DesiredHashAnnotation)
		}
	}
	raw, err := json.Marshal(m) // map keys are sorted: canonical
	if err != nil {
		return "", fmt.Errorf("hashing %s: %w", RefOf(obj), err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16]), nil
}

// contentOf is obj as a JSON-like map the caller may modify: the converter hands
// out an unstructured object's own map, so that one is copied.
func contentOf(obj client.Object) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return runtime.DeepCopyJSON(u.Object), nil
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

// copyObject copies obj for a change of its metadata (and, but for a CRD, of
// anything else). A CRD's copy shares its spec, megabytes of schema in a
// release, with obj: nothing writes into a CRD's spec (the applier sends a body
// of its own, see applyBody), and every reconcile copies the strategy twice.
func copyObject(obj client.Object) client.Object {
	if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
		shallow := *crd
		shallow.ObjectMeta = *crd.ObjectMeta.DeepCopy()
		return &shallow
	}
	return obj.DeepCopyObject().(client.Object)
}

// stamp returns a copy of obj carrying its Hash in DesiredHashAnnotation.
func stamp(obj client.Object) (client.Object, string, error) {
	h, err := Hash(obj)
	if err != nil {
		return nil, "", err
	}
	c := copyObject(obj)
	ann := c.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[DesiredHashAnnotation] = h
	c.SetAnnotations(ann)
	return c, h, nil
}

// RefOf is obj's reference. The kind comes from the Go type for typed objects
// (live objects read through a typed client have no TypeMeta), else from TypeMeta.
func RefOf(obj client.Object) ObjectRef {
	return ObjectRef{Kind: kindOf(obj), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// kinds maps every typed kind a strategy (plus its PDBs) can hold to its Kind.
var kinds = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := strategy.AddToScheme(s); err != nil {
		panic(err) // static registrations; cannot fail
	}
	if err := policyv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

func kindOf(obj client.Object) string {
	if gvks, _, err := kinds.ObjectKinds(obj); err == nil && len(gvks) > 0 && gvks[0].Kind != "" {
		return gvks[0].Kind
	}
	return obj.GetObjectKind().GroupVersionKind().Kind
}

// newLike returns an empty object of obj's type (and GVK, for unstructured) to
// read its live copy into. A CRD's live copy is read as metadata only: the plan
// compares the desired hash annotation and the generation, never the schema,
// and a release's CRDs hold megabytes of schema the cache would otherwise keep.
func newLike(obj client.Object) client.Object {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		out := &unstructured.Unstructured{}
		out.SetGroupVersionKind(o.GroupVersionKind())
		return out
	case *apiextensionsv1.CustomResourceDefinition:
		out := &metav1.PartialObjectMetadata{}
		out.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		return out
	}
	return reflect.New(reflect.TypeOf(obj).Elem()).Interface().(client.Object)
}

// PodTemplate is the pod template of a Deployment or DaemonSet, else nil.
func PodTemplate(obj client.Object) *corev1.PodTemplateSpec {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template
	case *appsv1.DaemonSet:
		return &o.Spec.Template
	}
	return nil
}

// Refs lists the reference of every object of the steps, PDBs included: the
// desired set that Orphans compares the cluster with.
func Refs(steps []Step) []ObjectRef {
	var out []ObjectRef
	for _, s := range steps {
		for _, o := range s.Objects {
			out = append(out, RefOf(o))
		}
	}
	return out
}
