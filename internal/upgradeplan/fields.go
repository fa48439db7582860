package upgradeplan

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxFields bounds the changed fields listed per object.
const maxFields = 12

// ignoredTop are fields that change on every write or are not the operator's.
var ignoredTop = map[string]bool{"status": true}

var ignoredMeta = map[string]bool{"resourceVersion": true, "uid": true, "generation": true, "creationTimestamp": true,
	"managedFields": true, "ownerReferences": true, "selfLink": true}

// FieldChanges lists the fields desired sets that differ in live, as
// "path: live -> desired", at most maxFields (then "... and N more"). Only
// fields the desired object sets are compared: the API server's defaults in
// live are not changes.
func FieldChanges(live, desired client.Object) []string {
	l, errL := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	d, errD := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
	if errL != nil || errD != nil {
		return []string{"(cannot compare)"}
	}
	var out []string
	for k, v := range d {
		if _, read := l[k]; ignoredTop[k] || k == "apiVersion" || k == "kind" || !read {
			continue // a part the live copy does not carry (CRDs are read as metadata) is not compared
		}
		diff(k, l[k], v, &out)
	}
	sort.Strings(out)
	if len(out) > maxFields {
		out = append(out[:maxFields], fmt.Sprintf("... and %d more", len(out)-maxFields))
	}
	return out
}

// bookkeeping are the operator's own stamps, which change with every target:
// listing them on every object would hide the real changes.
var bookkeeping = []string{"kubevirt.io/install-strategy-", "kubevirt.io/virt-operator-desired-hash", "app.kubernetes.io/version"}

func isBookkeeping(path string) bool {
	for _, b := range bookkeeping {
		if strings.Contains(path, b) {
			return true
		}
	}
	return false
}

func diff(path string, live, desired any, out *[]string) {
	if isBookkeeping(path) {
		return
	}
	switch d := desired.(type) {
	case map[string]any:
		l, _ := live.(map[string]any)
		for k, v := range d {
			if path == "metadata" && ignoredMeta[k] {
				continue
			}
			diff(path+"."+k, l[k], v, out)
		}
	case []any:
		l, _ := live.([]any)
		if len(l) != len(d) {
			*out = append(*out, fmt.Sprintf("%s: %d items -> %d items", path, len(l), len(d)))
			return
		}
		for i := range d {
			diff(fmt.Sprintf("%s[%d]", path, i), l[i], d[i], out)
		}
	default:
		if fmt.Sprint(live) != fmt.Sprint(desired) {
			*out = append(*out, fmt.Sprintf("%s: %s -> %s", path, show(live), show(desired)))
		}
	}
}

// show is a value short enough for one line.
func show(v any) string {
	if v == nil {
		return "(unset)"
	}
	s := fmt.Sprint(v)
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return strings.ReplaceAll(s, "\n", " ")
}
