package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

const stateFile = "state.json"

// state is what DIR/state.json records: enough for another process to find and stop
// the sandbox's components.
type state struct {
	Server    string      `json:"server,omitempty"`
	Processes []procState `json:"processes"`
}

type procState struct {
	Name   string `json:"name"`
	Pid    int    `json:"pid"`
	Binary string `json:"binary"`
}

// stateWriter appends processes to DIR/state.json as they start; the file is replaced
// atomically so a concurrent Down never reads half of it.
type stateWriter struct {
	mu   sync.Mutex
	path string
	st   state
}

func (w *stateWriter) update(f func(*state)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(&w.st)
	return writeState(w.path, w.st)
}

func writeState(path string, st state) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readState(path string) (state, error) {
	var st state
	data, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("parsing %s: %w", path, err)
	}
	return st, nil
}

// Down stops every process listed in DIR/state.json (SIGTERM, then SIGKILL after a
// grace period, waiting until each pid is gone) and removes DIR. A missing DIR is not
// an error. A non-empty DIR without state.json is refused rather than deleted, so a
// mistyped --dir cannot wipe unrelated files.
func Down(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	st, err := readState(filepath.Join(dir, stateFile))
	switch {
	case errors.Is(err, os.ErrNotExist):
		entries, rerr := os.ReadDir(dir)
		if rerr != nil {
			return rerr
		}
		if len(entries) > 0 {
			return fmt.Errorf("%s has no %s: not a sandbox directory, not removing it", dir, stateFile)
		}
	case err != nil:
		return err
	default:
		stopInOrder(st.Processes)
	}
	return os.RemoveAll(dir)
}

// stopInOrder stops the API clients first, then kube-apiserver, then etcd, so no
// component spends its shutdown retrying against a server that is already gone.
func stopInOrder(procs []procState) {
	rank := func(name string) int {
		switch name {
		case "etcd":
			return 2
		case "kube-apiserver":
			return 1
		}
		return 0
	}
	for r := range 3 {
		stopPids(slices.DeleteFunc(slices.Clone(procs), func(p procState) bool { return rank(p.Name) != r }), stopGrace)
	}
}

// running reports the processes of st that are still alive.
func running(st state) []procState {
	var alive []procState
	for _, p := range st.Processes {
		if pidAlive(p.Pid, p.Binary) {
			alive = append(alive, p)
		}
	}
	return alive
}

// Pids reads the pid of every component recorded in DIR/state.json, by name.
func Pids(dir string) (map[string]int, error) {
	st, err := readState(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, fmt.Errorf("reading the sandbox state: %w", err)
	}
	pids := make(map[string]int, len(st.Processes))
	for _, p := range st.Processes {
		pids[p.Name] = p.Pid
	}
	return pids, nil
}
