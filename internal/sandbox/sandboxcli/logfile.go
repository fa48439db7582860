package sandboxcli

import (
	"bytes"
	"os"
	"strings"
	"sync"
)

// deferredFile is the operator's log file: what is written before the sandbox
// directory exists is held in memory and written to the file when open creates
// it; after Close writes are dropped (a logger reports a failed write to the
// writer itself, which would be the terminal).
type deferredFile struct {
	mu     sync.Mutex
	held   bytes.Buffer
	f      *os.File
	path   string
	closed bool
}

func (d *deferredFile) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.closed:
		return len(p), nil
	case d.f != nil:
		return d.f.Write(p)
	default:
		return d.held.Write(p)
	}
}

// open creates path and writes what was held to it.
func (d *deferredFile) open(path string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := d.held.WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	d.f, d.path = f, path
	return nil
}

// tail is the file's last n lines (or what is held, before open).
func (d *deferredFile) tail(n int) string {
	d.mu.Lock()
	data := d.held.Bytes()
	path := d.path
	d.mu.Unlock()
	if path != "" {
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return err.Error()
		}
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Close closes the file; later writes are dropped.
func (d *deferredFile) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if d.f == nil {
		return nil
	}
	return d.f.Close()
}
