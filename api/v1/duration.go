package v1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a Go duration in the API: in JSON a string such as "1h30m", exactly
// as a metav1.Duration (the same field name, the same JSON), with one difference:
// decoding never fails. A value that is not a Go duration ("7d", "9999999999h",
// which overflows) is kept as it was written, in Invalid, and the reader of the
// field reports it, naming the field (Check). A metav1.Duration fails the
// decoding of the whole object instead, and with it the list the operator's
// informer reads: one CR stored under an older CRD without the validation below
// would stall every CR, with no status to say why.
//
// The CRD refuses such a value. The pattern bounds the digits of each unit and
// wants the units largest first, each at most once, as time.Duration.String
// writes them, so that nothing it accepts overflows (at most 999999h plus every
// smaller unit: under 8.3e18 ns, time.Duration holds 9.2e18); "0" is accepted
// too. It refuses a sign, a unit repeated or out of order, hours beyond 999999
// (114 years) and more than 9 fraction digits, which Go would parse.
//
// +kubebuilder:validation:Type=string
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:XValidation:rule="self == '0' || (size(self) > 0 && self.matches('^([0-9]{1,6}([.][0-9]{1,9})?h)?([0-9]{1,7}([.][0-9]{1,9})?m)?([0-9]{1,9}([.][0-9]{1,9})?s)?([0-9]{1,12}([.][0-9]{1,9})?ms)?([0-9]{1,15}([.][0-9]{1,9})?(us|µs|μs))?([0-9]{1,18}([.][0-9]{1,9})?ns)?$'))",message="must be a Go duration: a number and a unit per part, largest unit first, each unit once, units h, m, s, ms, us, ns, e.g. 90s, 1h30m or 4.8h; at most 999999h"
type Duration struct {
	Duration time.Duration `json:"-"`
	// Invalid is the JSON text of a value that is not a Go duration (a string
	// time.ParseDuration refuses, or not a string at all); empty when the value
	// is one. It is written back as it was read, so no write of the operator's
	// changes what the user wrote.
	Invalid string `json:"-"`
}

// DurationPattern is the pattern of the CRD's rule above (test-checked against
// the generated CRD): every string it matches parses as a time.Duration.
const DurationPattern = `^([0-9]{1,6}([.][0-9]{1,9})?h)?([0-9]{1,7}([.][0-9]{1,9})?m)?([0-9]{1,9}([.][0-9]{1,9})?s)?([0-9]{1,12}([.][0-9]{1,9})?ms)?([0-9]{1,15}([.][0-9]{1,9})?(us|µs|μs))?([0-9]{1,18}([.][0-9]{1,9})?ns)?$`

// DurationExpected says what a duration field takes, for messages.
const DurationExpected = "a Go duration such as 90s, 1h30m or 4.8h"

// UnmarshalJSON reads a Go duration string; anything else is kept in Invalid,
// never an error. JSON null leaves d as it is, as encoding/json does for values.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		if parsed, err := time.ParseDuration(s); err == nil {
			*d = Duration{Duration: parsed}
			return nil
		}
	}
	*d = Duration{Invalid: string(b)}
	return nil
}

// MarshalJSON writes the duration as metav1.Duration does (a Go duration
// string), or the invalid text as it was read.
func (d Duration) MarshalJSON() ([]byte, error) {
	if d.Invalid != "" {
		if json.Valid([]byte(d.Invalid)) {
			return []byte(d.Invalid), nil
		}
		return json.Marshal(d.Invalid)
	}
	return json.Marshal(d.Duration.String())
}

// String is the duration, or the invalid text.
func (d Duration) String() string {
	if d.Invalid != "" {
		return d.Invalid
	}
	return d.Duration.String()
}

// Valid reports whether d holds a Go duration; an unset one (nil) is valid.
func (d *Duration) Valid() bool { return d == nil || d.Invalid == "" }

// Check is nil when d is valid, else an error naming field (its path, such as
// spec.handlerRollout.bakeTime) and saying what it takes.
func (d *Duration) Check(field string) error {
	if d.Valid() {
		return nil
	}
	return fmt.Errorf("%s: %s is not %s (a number and a unit per part: h, m, s, ms, us or ns)", field, d.Invalid, DurationExpected)
}
