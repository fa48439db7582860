package storedversions

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/virt-operator/virt-operator/internal/workloads"
)

// pageSize bounds a rewrite's list pages (and so its memory).
const pageSize = 250

// Count is how many objects of a CRD exist (in any version: the API server
// does not say which one each is stored in), counted as package workloads
// counts them. It fails closed: a list that fails (a 404 for the CRD's served
// version included) is an error, never 0, since 0 would retire a version
// objects may be stored in. r must read full objects, not metadata.
func Count(ctx context.Context, r client.Reader, crd *apiextensionsv1.CustomResourceDefinition) (int, error) {
	return workloads.CountObjects(ctx, r, crd)
}

// Read decides for each desired CRD that exists (ReadOne); the decisions
// come in desired's order, absent CRDs have none.
func Read(ctx context.Context, r client.Reader, desired []*apiextensionsv1.CustomResourceDefinition) ([]Decision, error) {
	var out []Decision
	for _, want := range desired {
		live, d, err := ReadOne(ctx, r, want)
		if err != nil {
			return nil, err
		}
		if live != nil {
			out = append(out, d)
		}
	}
	return out, nil
}

// ReadOne reads the live CRD of want (nil when absent) and decides for its
// update, counting its objects where a stored version is retired; r must
// read full objects, not metadata.
func ReadOne(ctx context.Context, r client.Reader, want *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinition, Decision, error) {
	live := &apiextensionsv1.CustomResourceDefinition{}
	switch err := r.Get(ctx, client.ObjectKeyFromObject(want), live); {
	case apierrors.IsNotFound(err):
		return nil, Decision{}, nil
	case err != nil:
		return nil, Decision{}, fmt.Errorf("reading CRD %s: %w", want.Name, err)
	}
	n := 0
	if len(Retired(live.Status.StoredVersions, want)) > 0 {
		var err error
		if n, err = Count(ctx, r, live); err != nil {
			return nil, Decision{}, err
		}
	}
	return live, Decide(live, want, n), nil
}

// RewriteObjects stores every object of crd again, read and written as version
// (served by crd), page by page: each update, its content unchanged, is
// encoded in the CRD's current storage version. An object changed meanwhile
// is read again and rewritten; one deleted meanwhile is skipped. It returns
// how many objects it rewrote. Run again it is harmless: an object already
// stored in the storage version is not written again by the API server.
func RewriteObjects(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition, version string) (int, error) {
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.Kind}
	rewritten, cont := 0, ""
	for {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(listKind(crd)))
		if err := c.List(ctx, list, client.Limit(pageSize), client.Continue(cont)); err != nil {
			return rewritten, fmt.Errorf("listing the objects of CRD %s as %s: %w", crd.Name, version, err)
		}
		for i := range list.Items {
			if err := rewriteOne(ctx, c, &list.Items[i]); err != nil {
				return rewritten, fmt.Errorf("rewriting %s %s as %s: %w", crd.Spec.Names.Kind, client.ObjectKeyFromObject(&list.Items[i]), version, err)
			}
			rewritten++
		}
		if cont = list.GetContinue(); cont == "" {
			return rewritten, nil
		}
	}
}

// listKind is the CRD's list kind: the API server defaults it to the kind
// and "List", and the release data (as upstream's CRDs) leaves it unset.
func listKind(crd *apiextensionsv1.CustomResourceDefinition) string {
	if crd.Spec.Names.ListKind != "" {
		return crd.Spec.Names.ListKind
	}
	return crd.Spec.Names.Kind + "List"
}

// rewriteOne updates obj unchanged, reading it again after a conflict.
func rewriteOne(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	const attempts = 5
	for i := 0; ; i++ {
		err := c.Update(ctx, obj)
		switch {
		case err == nil || apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err) || i == attempts-1:
			return err
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
}

// Trim drops the retired versions from a CRD's status.storedVersions, the CRD
// read again (the bridge's write added its storage version there).
func Trim(ctx context.Context, c client.Client, r client.Reader, name string, retired []string) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := r.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return err
	}
	base := crd.DeepCopy()
	crd.Status.StoredVersions = slices.DeleteFunc(crd.Status.StoredVersions, func(v string) bool { return slices.Contains(retired, v) })
	if err := c.Status().Patch(ctx, crd, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("trimming the stored versions of CRD %s: %w", name, err)
	}
	return nil
}

// StorageVersionHash is what the API server's discovery reports as a
// resource's storageVersionHash while its objects are stored as
// group/version, kind: the first 8 bytes of the SHA-256 of
// "group/version/kind", in base64 (the discovery API documents it as an
// opaque value that changes with the storage version; this is how it is made).
func StorageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// Resources reads the API resources of a group version (a discovery client's
// ServerResourcesForGroupVersion).
type Resources func(groupVersion string) (*metav1.APIResourceList, error)

// WaitStored waits until discovery reports crd's objects stored as version:
// the API server switches a CRD's storage a moment after the CRD is written,
// and an object rewritten before that would be stored in the old version
// again (and be unreadable once that version is dropped). It polls discovery
// in the served version until the hash matches or the timeout passes.
func WaitStored(ctx context.Context, resources Resources, crd *apiextensionsv1.CustomResourceDefinition, version string, timeout time.Duration) error {
	want := StorageVersionHash(crd.Spec.Group, version, crd.Spec.Names.Kind)
	seen := ""
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		list, err := resources(crd.Spec.Group + "/" + version)
		if err != nil {
			return false, nil //nolint:nilerr // not served yet: a moment after the write
		}
		for _, r := range list.APIResources {
			if r.Name == crd.Spec.Names.Plural {
				seen = r.StorageVersionHash
				return seen == want, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("the API server does not report CRD %s stored as %s yet (storage version hash %q, want %q): %w", crd.Name, version, seen, want, err)
	}
	return nil
}
