// Package activecr owns one choice both controllers make: which KubeVirt CR is
// the cluster's active one. The operator acts on that CR alone; every other CR
// is ignored, with a message that says why.
package activecr

import (
	"fmt"
	"sort"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// Of picks the one KubeVirt CR the operator acts on: the oldest in
// the operator's namespace (ties broken by name). Every other CR is ignored,
// and IgnoredMessage says why, so a second CR never disturbs the first.
func Of(all []v1.KubeVirt, operatorNamespace string) *v1.KubeVirt {
	var candidates []*v1.KubeVirt
	for i := range all {
		if all[i].Namespace == operatorNamespace {
			candidates = append(candidates, &all[i])
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	sort.Slice(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	return candidates[0]
}

// IgnoredMessage is the message on a CR that is not the active one.
func IgnoredMessage(kv *v1.KubeVirt, active *v1.KubeVirt, operatorNamespace string) string {
	if kv.Namespace != operatorNamespace {
		return fmt.Sprintf("There is an active KubeVirt deployment: this CR is ignored because the operator only manages a KubeVirt in its namespace %q", operatorNamespace)
	}
	return fmt.Sprintf("There is an active KubeVirt deployment: %s/%s is the cluster's KubeVirt and this CR is ignored", active.Namespace, active.Name)
}
