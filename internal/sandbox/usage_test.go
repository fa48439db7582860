package sandbox

import (
	"errors"
	"os"
	"testing"
)

func TestStatCPUSeconds(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       float64
		wantErr    bool
	}{
		{name: "user, system and waited-for children", want: 3.5,
			stat: "42 (kube-apiserver) S 1 42 42 0 -1 4194560 100 0 0 0 200 100 30 20 20 0 12 0 100 1000 10"},
		{name: "a command with spaces and parentheses", want: 0.04,
			stat: "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 1 1 1 1 20 0 1 0 5 100 1"},
		{name: "no command", stat: "42 S 1", wantErr: true},
		{name: "cut short", stat: "42 (etcd) S 1 42 42 0 -1 0 0 0 0 0 1 1", wantErr: true},
		{name: "not a number", stat: "42 (etcd) S 1 42 42 0 -1 0 0 0 0 0 x 1 1 1 20", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := statCPUSeconds([]byte(tc.stat))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("statCPUSeconds(%q) = %v, %v; want %v, error %v", tc.stat, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// This process's own line parses, and only a live component is listed.
func TestCPUSecondsOfLiveComponents(t *testing.T) {
	dir := t.TempDir()
	w := &stateWriter{path: dir + "/" + stateFile}
	if err := w.update(func(st *state) {
		st.Processes = []procState{{Name: "self", Pid: os.Getpid()}, {Name: "gone", Pid: 1 << 30}}
	}); err != nil {
		t.Fatal(err)
	}
	got, err := CPUSeconds(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["self"]; !ok || len(got) != 1 {
		t.Fatalf("CPUSeconds = %v, want this process only", got)
	}
}

// A directory without a sandbox (stopped, or never started) says so, as
// os.ErrNotExist, which a caller that stopped it itself can ignore.
func TestCPUSecondsWithoutASandbox(t *testing.T) {
	if _, err := CPUSeconds(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("CPUSeconds of an empty directory: %v, want os.ErrNotExist", err)
	}
}
