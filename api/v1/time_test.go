package v1_test

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/validation/strfmt"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

var timePattern = regexp.MustCompile(v1.TimePattern)

// What the CRD accepts for a timestamp, its format and TimePattern, decodes
// as a metav1.Time; what the format alone accepts did not always (review 4 F12).
func TestTimePatternAcceptsOnlyWhatMetav1TimeDecodes(t *testing.T) {
	accepts := func(s string) bool { return strfmt.IsDateTime(s) && timePattern.MatchString(s) }
	decodes := func(s string) error {
		raw, _ := json.Marshal(s)
		return json.Unmarshal(raw, &metav1.Time{})
	}
	for _, s := range []string{"2026-12-02T12:00:00Z", "2026-12-02T12:00:00.5Z", "2026-12-02T12:00:00.123456789+01:00", "2024-02-29T23:59:59-23:59", "0000-01-01T00:00:00Z"} {
		if !accepts(s) {
			t.Errorf("%q is refused", s)
		}
		if err := decodes(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{
		// Review 4's: the format takes them, Go does not.
		"2026-12-02t12:00:00z", "2026-12-02T12:00:00x5Z", "2026-12-02T12:00:00.5z",
		"2026-12-02T12:00:00+99:99", "2026-12-02T12:00:00,5Z", "2026-12-02T12:00:00.1234567890Z",
		"2026-12-02T12:00:00+24:00", "2026-12-02T12:00:00+0100", "2026-12-02 12:00:00Z", " 2026-12-02T12:00:00Z",
	} {
		if accepts(s) {
			t.Errorf("%q is accepted", s)
		}
	}
	// What the operator writes matches.
	for _, at := range []time.Time{time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC), time.Date(1, 1, 1, 0, 0, 1, 0, time.FixedZone("x", 3600)), time.Unix(1<<34, 999)} {
		raw, _ := json.Marshal(metav1.NewTime(at))
		var s string
		_ = json.Unmarshal(raw, &s)
		if !accepts(s) {
			t.Errorf("the operator writes %q, which is refused", s)
		}
	}
}

// Every timestamp of the CRD carries TimePattern.
func TestTheCRDUsesTimePattern(t *testing.T) {
	crd := newCRDValidator(t)
	n := 0
	var walk func(path string, s *apiextensionsv1.JSONSchemaProps)
	walk = func(path string, s *apiextensionsv1.JSONSchemaProps) {
		if s.Format == "date-time" {
			n++
			if s.Pattern != v1.TimePattern {
				t.Errorf("%s is a date-time without TimePattern: %q", path, s.Pattern)
			}
		}
		for name, p := range s.Properties {
			walk(path+"."+name, &p)
		}
		if s.Items != nil && s.Items.Schema != nil {
			walk(path+"[]", s.Items.Schema)
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			walk(path+"{}", s.AdditionalProperties.Schema)
		}
	}
	walk("", crd.schema)
	if n != 17 {
		t.Errorf("the CRD has %d timestamps, want 17 (every metav1.Time of the status)", n)
	}
}
