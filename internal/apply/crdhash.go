package apply

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"weak"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hashCRD is Hash for a CRD, from its typed JSON: the same content, without the
// detour through a map. Only the metadata is copied.
//
// A release's CRDs hold megabytes of schema, and every pass hashes them: at a
// pass per DaemonSet event during a rollout, marshalling them was a third of
// the operator's CPU. So the digest is remembered per versions array: the
// desired CRDs of one strategy share it (copyObject shares a CRD's spec), and
// nothing writes into it after generation (a CRD that differs, Bridge's, is a
// deep copy with an array of its own). What else the digest covers (metadata,
// the rest of the spec) is small and part of the key. The key holds the array
// weakly: a strategy replaced (the observed one after an upgrade) takes its
// megabytes of schema with it.
func hashCRD(crd *apiextensionsv1.CustomResourceDefinition) (string, error) {
	c := *crd
	c.TypeMeta, c.Status = metav1.TypeMeta{}, apiextensionsv1.CustomResourceDefinitionStatus{}
	c.ObjectMeta = *crd.ObjectMeta.DeepCopy()
	c.CreationTimestamp, c.DeletionTimestamp, c.ManagedFields = metav1.Time{}, nil, nil
	c.ResourceVersion, c.UID, c.Generation = "", "", 0
	delete(c.Annotations, DesiredHashAnnotation)
	if len(c.Spec.Versions) == 0 {
		return digest(&c)
	}
	rest := c
	rest.Spec.Versions = nil
	restJSON, err := json.Marshal(&rest)
	if err != nil {
		return "", fmt.Errorf("hashing %s: %w", RefOf(crd), err)
	}
	key := crdHashKey{versions: weak.Make(&c.Spec.Versions[0]), n: len(c.Spec.Versions), rest: string(restJSON)}
	if h, ok := crdHashes.get(key); ok {
		return h, nil
	}
	h, err := digest(&c)
	if err != nil {
		return "", err
	}
	crdHashes.put(key, h)
	return h, nil
}

// digest is the first 16 bytes of the SHA-256 of c's JSON, in hex.
func digest(c *apiextensionsv1.CustomResourceDefinition) (string, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("hashing %s: %w", RefOf(c), err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16]), nil
}

// crdHashKey names one CRD's content: its versions array, their count, and
// the JSON of everything else. A weak pointer equals only one made from the
// same live object: an array allocated later at a freed one's address does
// not match the freed one's key.
type crdHashKey struct {
	versions weak.Pointer[apiextensionsv1.CustomResourceDefinitionVersion]
	n        int
	rest     string
}

// maxCRDHashes bounds the memo: a few releases' CRDs (about 40 each). Past it
// the keys of freed arrays are dropped, and if that is not enough the memo
// starts again.
const maxCRDHashes = 256

var crdHashes = &crdHashMemo{m: map[crdHashKey]string{}}

type crdHashMemo struct {
	mu sync.Mutex
	m  map[crdHashKey]string
}

func (c *crdHashMemo) get(k crdHashKey) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.m[k]
	return h, ok
}

func (c *crdHashMemo) put(k crdHashKey, h string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCRDHashes {
		for key := range c.m {
			if key.versions.Value() == nil {
				delete(c.m, key)
			}
		}
	}
	if len(c.m) >= maxCRDHashes {
		c.m = map[crdHashKey]string{}
	}
	c.m[k] = h
}
