package operator

import (
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	if got := TuneGC(); got != DefaultGCPercent || debug.SetGCPercent(DefaultGCPercent) != DefaultGCPercent {
		t.Fatalf("GOGC unset: %d, want %d", got, DefaultGCPercent)
	}
	t.Setenv("GOGC", "80")
	debug.SetGCPercent(80) // what the runtime read from GOGC at start
	if got := TuneGC(); got != 80 {
		t.Fatalf("GOGC=80: %d, want it kept", got)
	}
}
