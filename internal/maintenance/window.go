// Package maintenance decides maintenance windows: given the windows of a
// KubeVirt CR (days, a local start time, a duration, a time zone) and a time,
// whether one is open and when the next opens. The workload updater and the
// control-plane rollout share it: outside every window nothing new starts.
package maintenance

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	v1 "github.com/virt-operator/virt-operator/api/v1"
)

// maxWindow is the longest a window may stay open: a week covers every schedule.
const maxWindow = 7 * 24 * time.Hour

// State is whether new work may start at a given time.
type State struct {
	// Windows is how many windows there are (none: always open, nothing to report).
	Windows int
	Open    bool
	// NextOpen is when the next window opens (zero while open, or when none can).
	NextOpen time.Time
	// Err names the windows that cannot be read; they never open.
	Err error
}

// Evaluate evaluates the windows at now. None at all means always open. A window
// that cannot be read (bad time zone, start or duration) never opens and is
// named in Err, so a typo never opens the gate wider than the admin meant.
func Evaluate(ws []v1.MaintenanceWindow, now time.Time) State {
	if len(ws) == 0 {
		return State{Open: true}
	}
	st := State{Windows: len(ws)}
	var bad []string
	for i, w := range ws {
		open, next, err := evalWindow(w, now)
		if err != nil {
			bad = append(bad, fmt.Sprintf("window %d: %v", i, err))
			continue
		}
		if open {
			st.Open = true
		}
		if !next.IsZero() && (st.NextOpen.IsZero() || next.Before(st.NextOpen)) {
			st.NextOpen = next
		}
	}
	if st.Open {
		st.NextOpen = time.Time{}
	}
	if len(bad) > 0 {
		st.Err = fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return st
}

// Check says why w can never open (a time zone this operator does not know, a
// start that is not HH:MM, a duration outside (0, 168h] or not a Go duration, a
// day that is none), or nil: a window that passes opens within a week. The
// admission webhook refuses what it reports, so a window the operator would
// hold on forever is never stored.
func Check(w v1.MaintenanceWindow) error {
	_, err := parse(w)
	return err
}

// parsedWindow is a MaintenanceWindow read.
type parsedWindow struct {
	loc          *time.Location
	hour, minute int
	duration     time.Duration
	days         map[time.Weekday]bool
}

func parse(w v1.MaintenanceWindow) (parsedWindow, error) {
	p := parsedWindow{loc: time.UTC}
	var err error
	if w.TimeZone != "" {
		if p.loc, err = time.LoadLocation(w.TimeZone); err != nil {
			return p, fmt.Errorf("time zone %q: %w", w.TimeZone, err)
		}
	}
	if p.hour, p.minute, err = parseClock(w.Start); err != nil {
		return p, err
	}
	if !w.Duration.Valid() {
		return p, fmt.Errorf("duration %s is not %s", w.Duration.Invalid, v1.DurationExpected)
	}
	if p.duration = w.Duration.Duration; p.duration <= 0 || p.duration > maxWindow {
		return p, fmt.Errorf("duration %s is not within (0, 168h]", p.duration)
	}
	p.days, err = weekdays(w.Days)
	return p, err
}

// evalWindow: whether w is open at now, else when it next opens.
func evalWindow(w v1.MaintenanceWindow, now time.Time) (open bool, next time.Time, err error) {
	p, err := parse(w)
	if err != nil {
		return false, time.Time{}, err
	}
	hour, minute, loc, days := p.hour, p.minute, p.loc, p.days
	local := now.In(loc)
	// Openings from 8 days back (a week-long window still open) to 8 ahead.
	for offset := -8; offset <= 8; offset++ {
		day := local.AddDate(0, 0, offset)
		if len(days) > 0 && !days[day.Weekday()] {
			continue
		}
		start := time.Date(day.Year(), day.Month(), day.Day(), hour, minute, 0, 0, loc)
		end := start.Add(p.duration)
		if !now.Before(start) && now.Before(end) {
			return true, time.Time{}, nil
		}
		if start.After(now) && (next.IsZero() || start.Before(next)) {
			next = start
		}
	}
	return false, next, nil
}

func parseClock(s string) (hour, minute int, err error) {
	h, m, ok := strings.Cut(s, ":")
	if ok {
		hour, err = strconv.Atoi(h)
	}
	if ok && err == nil {
		minute, err = strconv.Atoi(m)
	}
	if !ok || err != nil || len(h) != 2 || len(m) != 2 || hour > 23 || minute > 59 || hour < 0 || minute < 0 {
		return 0, 0, fmt.Errorf("start %q is not HH:MM", s)
	}
	return hour, minute, nil
}

func weekdays(names []v1.Weekday) (map[time.Weekday]bool, error) {
	out := map[time.Weekday]bool{}
	for _, n := range names {
		found := false
		for d := time.Sunday; d <= time.Saturday; d++ {
			if string(n) == d.String() {
				out[d], found = true, true
			}
		}
		if !found {
			return nil, fmt.Errorf("day %q is not a weekday name such as Monday", n)
		}
	}
	return out, nil
}
