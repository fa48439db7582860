package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseAndRender(t *testing.T) {
	in := `goos: linux
BenchmarkComputeID-2   	  140000	      8400 ns/op	    1234 B/op	      12 allocs/op
BenchmarkScale1000-2   	       1	1500000000000 ns/op	        95.0 settled-rss-MiB	         1.10 drain-ratio
--- BENCH: BenchmarkScale1000-2
ok  	example	10s
`
	got, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].name != "ComputeID" || got[1].name != "Scale1000" || got[1].metrics[1] != [2]string{"95.0", "settled-rss-MiB"} {
		t.Fatalf("parsed %+v", got)
	}
	var b strings.Builder
	render(&b, got[:1], got[1:], "### scale\n| a |", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	for _, want := range []string{"`make bench`", "| settled-rss-MiB | 95.0 |", "### scale", "| ComputeID | 8400 ns/op, 1234 B/op, 12 allocs/op |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("rendered lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "1500000000000") {
		t.Error("a one-iteration ns/op is shown")
	}
}
