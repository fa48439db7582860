package operator

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv(MemoryLimitEnv, "")
	if got, limit, err := TuneGC(); err != nil || got != DefaultGCPercent || debug.SetGCPercent(DefaultGCPercent) != DefaultGCPercent || limit != math.MaxInt64 {
		t.Fatalf("GOGC and limits unset: %d, %d, %v; want %d and no limit", got, limit, err, DefaultGCPercent)
	}
	t.Setenv("GOGC", "80")
	debug.SetGCPercent(80) // what the runtime read from GOGC at start
	if got, _, _ := TuneGC(); got != 80 {
		t.Fatalf("GOGC=80: %d, want it kept", got)
	}
	t.Setenv(MemoryLimitEnv, "268435456") // what the downward API gives for 256Mi
	if _, limit, err := TuneGC(); err != nil || limit != 214748364 || debug.SetMemoryLimit(-1) != limit {
		t.Fatalf("a 256Mi container: limit %d, %v; want 80%% of it set", limit, err)
	}
	t.Setenv(MemoryLimitEnv, "lots")
	if _, limit, err := TuneGC(); err == nil || !strings.Contains(err.Error(), MemoryLimitEnv) || limit != 214748364 {
		t.Fatalf("a bad limit: %d, %v; want an error naming %s and the limit left as it was", limit, err, MemoryLimitEnv)
	}
}

func TestSoftMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		name, gomemlimit, container string
		want                        int64
		wantErr                     string
	}{
		{name: "no limit anywhere"},
		{name: "bytes from the downward API", container: "268435456", want: 214748364},
		{name: "a quantity", container: "1Gi", want: 858993459},
		{name: "GOMEMLIMIT wins", gomemlimit: "100MiB", container: "1Gi"},
		{name: "GOMEMLIMIT off still wins", gomemlimit: "off", container: "1Gi"},
		{name: "not a size", container: "lots", wantErr: `VIRT_OPERATOR_MEMORY_LIMIT="lots": not a memory size`},
		{name: "zero", container: "0", wantErr: "must be a positive number of bytes"},
		{name: "negative", container: "-1Gi", wantErr: "must be a positive number of bytes"},
		{name: "a fraction of a byte", container: "0.5", wantErr: "must be a positive number of bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SoftMemoryLimit(tc.gomemlimit, tc.container)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("%d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
