package v1

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The JSON is metav1.Duration's, both ways, for every valid value.
func TestDurationJSONIsMetav1s(t *testing.T) {
	for _, d := range []time.Duration{0, time.Nanosecond, 1500 * time.Microsecond, 90 * time.Second, 4*time.Hour + 48*time.Minute, math.MaxInt64} {
		ours, err := json.Marshal(Duration{Duration: d})
		if err != nil {
			t.Fatal(err)
		}
		theirs, _ := json.Marshal(metav1.Duration{Duration: d})
		if string(ours) != string(theirs) {
			t.Errorf("%v: %s, metav1.Duration writes %s", d, ours, theirs)
		}
		var back Duration
		if err := json.Unmarshal(theirs, &back); err != nil || back.Duration != d || !back.Valid() {
			t.Errorf("%s read back as %+v, %v", theirs, back, err)
		}
	}
}

// A value Go cannot parse never fails the decoding (of the object, or of a list
// of them): it is kept, reported by Check with the field, and written back as it
// was read.
func TestDurationKeepsWhatItCannotParse(t *testing.T) {
	for _, raw := range []string{`"7d"`, `"9999999999h"`, `""`, `"1h1x"`, `42`, `{"a":1}`, `true`} {
		list := `{"items":[{"metadata":{"name":"bad"},"spec":{"handlerRollout":{"bakeTime":` + raw + `}}},{"metadata":{"name":"good"},"spec":{"handlerRollout":{"bakeTime":"10s"}}}]}`
		var kvs KubeVirtList
		if err := json.Unmarshal([]byte(list), &kvs); err != nil {
			t.Fatalf("%s: the list does not decode: %v", raw, err)
		}
		bad, good := kvs.Items[0].Spec.HandlerRollout.BakeTime, kvs.Items[1].Spec.HandlerRollout.BakeTime
		if bad.Valid() || bad.Duration != 0 || bad.Invalid != raw {
			t.Errorf("%s decoded as %+v", raw, bad)
		}
		if err := bad.Check("spec.handlerRollout.bakeTime"); err == nil || !strings.Contains(err.Error(), "spec.handlerRollout.bakeTime: "+raw+" is not a Go duration") {
			t.Errorf("%s: Check says %v", raw, err)
		}
		if !good.Valid() || good.Duration != 10*time.Second || good.Check("x") != nil {
			t.Errorf("the good one: %+v", good)
		}
		out, err := json.Marshal(bad)
		if err != nil || string(out) != raw {
			t.Errorf("%s written back as %s (%v)", raw, out, err)
		}
		// The unstructured converter (server-side apply, patches) keeps it too.
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&kvs.Items[0])
		if err != nil {
			t.Fatal(err)
		}
		var again KubeVirt
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &again); err != nil {
			t.Fatalf("%s: from unstructured: %v", raw, err)
		}
		if got := again.Spec.HandlerRollout.BakeTime; got.Invalid != raw {
			t.Errorf("%s through unstructured: %+v", raw, got)
		}
	}
	var nilDuration *Duration
	if !nilDuration.Valid() || nilDuration.Check("x") != nil {
		t.Error("an unset duration is not valid")
	}
	w := MaintenanceWindow{Duration: Duration{Duration: time.Hour}}
	if err := json.Unmarshal([]byte(`{"start":"01:00","duration":null}`), &w); err != nil || w.Duration.Duration != time.Hour {
		t.Errorf("null changed the value: %+v %v", w.Duration, err)
	}
}

var durationPattern = regexp.MustCompile(DurationPattern)

// Every string the CRD's pattern accepts parses, and fits in a time.Duration: the
// largest value of each part, all parts at once.
func TestDurationPatternAcceptsOnlyWhatGoParses(t *testing.T) {
	largest := "999999.999999999h9999999.999999999m999999999.999999999s999999999999.999999999ms999999999999999.999999999µs999999999999999999.999999999ns"
	for _, s := range []string{largest, "0s", "90s", "1h30m", "4.8h", "33.6h", "1h0m0s", "1.5µs", "1.5μs", "100us", "10ms", "47m16.854775807s", "999999h"} {
		if !durationPattern.MatchString(s) {
			t.Errorf("%q is refused", s)
			continue
		}
		if _, err := time.ParseDuration(s); err != nil {
			t.Errorf("%q matches but does not parse: %v", s, err)
		}
	}
	for _, s := range []string{"7d", "9999999999h", "1000000h", "-1h", "+1h", "1m1h", "1h1h", "1.h", ".5h", "1h 30m", "1", "1.0000000001s", "h"} {
		if durationPattern.MatchString(s) {
			t.Errorf("%q is accepted", s)
		}
	}
	// Random strings from the pattern's own grammar all parse.
	rng := rand.New(rand.NewPCG(1, 2))
	units := []struct {
		unit   string
		digits int
	}{{"h", 6}, {"m", 7}, {"s", 9}, {"ms", 12}, {"µs", 15}, {"ns", 18}}
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
		}
		return string(b)
	}
	for range 20000 {
		var sb strings.Builder
		for _, u := range units {
			if rng.IntN(2) == 0 {
				continue
			}
			sb.WriteString(digits(1 + rng.IntN(u.digits)))
			if rng.IntN(2) == 0 {
				sb.WriteString("." + digits(1+rng.IntN(9)))
			}
			sb.WriteString(u.unit)
		}
		s := sb.String()
		if s == "" {
			continue
		}
		if !durationPattern.MatchString(s) {
			t.Fatalf("the grammar's %q does not match", s)
		}
		if _, err := time.ParseDuration(s); err != nil {
			t.Fatalf("%q matches but does not parse: %v", s, err)
		}
	}
}

// The CRD's rule is DurationPattern, on every duration field.
func TestTheCRDUsesDurationPattern(t *testing.T) {
	raw, err := os.ReadFile("../../config/crd/bases/kubevirt.io_kubevirts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rule := "rule: self == '0' || (size(self) > 0 && self.matches('" + DurationPattern + "'))"
	if n := strings.Count(string(raw), rule); n != 14 {
		t.Errorf("the CRD has the duration rule %d times, want 14 (every duration field of the spec)", n)
	}
}
