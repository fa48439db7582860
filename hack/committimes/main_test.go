package main

import (
	"strings"
	"testing"
	"time"
)

func TestLastCommitTimesKeepsTheNewest(t *testing.T) {
	// c.go's newest commit comes last: a merged branch's commit can be newer
	// than one the log shows before it.
	log := "\x00300\n\na.go\ndocs/b.md\n\x00200\n\na.go\nc.go\n\x00400\n\nc.go\n"
	times, err := lastCommitTimes(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"a.go": 300, "docs/b.md": 300, "c.go": 400}
	if len(times) != len(want) {
		t.Fatalf("%v", times)
	}
	for path, secs := range want {
		if !times[path].Equal(time.Unix(secs, 0)) {
			t.Errorf("%s: %v, want %d", path, times[path], secs)
		}
	}
}

func TestLastCommitTimesRefusesWhatIsNotALog(t *testing.T) {
	for _, log := range []string{"a.go\n", "\x00soon\n\na.go\n"} {
		if _, err := lastCommitTimes(strings.NewReader(log)); err == nil {
			t.Errorf("%q: no error", log)
		}
	}
}
