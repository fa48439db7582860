package apply

import (
	"encoding/json"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CertificatesFieldManager is the certificate controller's field manager: it
// writes the caBundle of webhooks and APIServices, which bumps their
// generation; that write is the operator's too.
const CertificatesFieldManager = "virt-operator-certificates"

// writtenByUs: live's spec was last written by this operator. Its generation
// moves only with its spec, so when it is newer than the one recorded and no
// other manager owns a field of its spec (a kubectl edit, apply or scale
// would), the newer generation is this operator's own write that the record
// missed, not an edit out of band. An object without managed fields (a
// client that tracks none) proves nothing: it is not taken as ours.
func writtenByUs(live client.Object) bool {
	fields := live.GetManagedFields()
	if len(fields) == 0 {
		return false
	}
	for _, f := range fields {
		if f.Manager == FieldManager || f.Manager == CertificatesFieldManager || f.Subresource == "status" || f.FieldsV1 == nil {
			continue
		}
		var owned map[string]json.RawMessage
		if err := json.Unmarshal(f.FieldsV1.GetRawBytes(), &owned); err != nil {
			return false
		}
		if _, spec := owned["f:spec"]; spec {
			return false
		}
		if _, webhooks := owned["f:webhooks"]; webhooks { // webhook configurations have no spec
			return false
		}
	}
	return true
}
