package maintenance

import (
	"strings"
	"testing"
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

func window(start string, d time.Duration, tz string, days ...v1.Weekday) v1.MaintenanceWindow {
	return v1.MaintenanceWindow{Start: start, Duration: v1.Duration{Duration: d}, TimeZone: tz, Days: days}
}

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func TestWindows(t *testing.T) {
	// t0 is Thursday 2026-01-01 12:00 UTC.
	at := func(s string) time.Time {
		x, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	cases := []struct {
		name    string
		ws      []v1.MaintenanceWindow
		now     time.Time
		open    bool
		next    string
		wantErr string
	}{
		{"no windows: always open", nil, t0, true, "", ""},
		{"inside a daily window", []v1.MaintenanceWindow{window("11:00", 2*time.Hour, "")}, t0, true, "", ""},
		{"before today's opening", []v1.MaintenanceWindow{window("13:30", time.Hour, "")}, t0, false, "2026-01-01T13:30:00Z", ""},
		{"after it: tomorrow's", []v1.MaintenanceWindow{window("09:00", time.Hour, "")}, t0, false, "2026-01-02T09:00:00Z", ""},
		{"the end is exclusive", []v1.MaintenanceWindow{window("11:00", time.Hour, "")}, t0, false, "2026-01-02T11:00:00Z", ""},
		{"a night window open past midnight", []v1.MaintenanceWindow{window("22:00", 4*time.Hour, "")}, at("2026-01-02T01:00:00Z"), true, "", ""},
		{"weekend only, on a Thursday", []v1.MaintenanceWindow{window("02:00", 4*time.Hour, "", "Saturday", "Sunday")}, t0, false, "2026-01-03T02:00:00Z", ""},
		{"a week-long window opened last Friday", []v1.MaintenanceWindow{window("00:00", 7*24*time.Hour, "", "Friday")}, t0, true, "", ""},
		{"in a time zone", []v1.MaintenanceWindow{window("13:00", time.Hour, "Europe/Berlin")}, t0, true, "", ""},
		{"the soonest of two", []v1.MaintenanceWindow{window("20:00", time.Hour, ""), window("14:00", time.Hour, "")}, t0, false, "2026-01-01T14:00:00Z", ""},
		{"a bad time zone never opens", []v1.MaintenanceWindow{window("11:00", 2*time.Hour, "Mars/Olympus")}, t0, false, "", `window 0: time zone "Mars/Olympus"`},
		{"a bad one beside a good one", []v1.MaintenanceWindow{window("25:00", time.Hour, ""), window("11:00", 2*time.Hour, "")}, t0, true, "", `window 0: start "25:00" is not HH:MM`},
		{"zero duration", []v1.MaintenanceWindow{window("11:00", 0, "")}, t0, false, "", "window 0: duration 0s"},
		{"longer than a week", []v1.MaintenanceWindow{window("11:00", 8*24*time.Hour, "")}, t0, false, "", "window 0: duration 192h0m0s"},
		{"a bad day", []v1.MaintenanceWindow{window("11:00", time.Hour, "", "Caturday")}, t0, false, "", `window 0: day "Caturday"`},
		{"a duration stored that is not a Go duration", []v1.MaintenanceWindow{{Start: "11:00", Duration: v1.Duration{Invalid: `"7d"`}}}, t0, false, "", `window 0: duration "7d" is not a Go duration`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := Evaluate(c.ws, c.now)
			next := ""
			if !st.NextOpen.IsZero() {
				next = st.NextOpen.UTC().Format(time.RFC3339)
			}
			if st.Open != c.open || next != c.next {
				t.Fatalf("open %v next %q, want %v %q", st.Open, next, c.open, c.next)
			}
			if (c.wantErr == "") != (st.Err == nil) || (st.Err != nil && !strings.Contains(st.Err.Error(), c.wantErr)) {
				t.Fatalf("err %v, want %q", st.Err, c.wantErr)
			}
		})
	}
}

// Check refuses what Evaluate would never open, and passes what it opens.
func TestCheck(t *testing.T) {
	for _, w := range []v1.MaintenanceWindow{window("02:00", time.Hour, "Europe/Berlin", "Sunday"), window("23:59", 7*24*time.Hour, "")} {
		if err := Check(w); err != nil {
			t.Errorf("%+v: %v", w, err)
		}
	}
	for want, w := range map[string]v1.MaintenanceWindow{
		`time zone "Atlantis/Central"`: window("02:00", time.Hour, "Atlantis/Central"),
		`start "2:00" is not HH:MM`:    window("2:00", time.Hour, ""),
		"duration 0s":                  window("02:00", 0, ""),
		`day "Caturday"`:               window("02:00", time.Hour, "", "Caturday"),
	} {
		if err := Check(w); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", w, err, want)
		}
	}
}
