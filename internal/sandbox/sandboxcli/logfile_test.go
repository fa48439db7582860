package sandboxcli

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDeferredFileHoldsWhatComesBeforeTheFile(t *testing.T) {
	d := &deferredFile{}
	_, _ = d.Write([]byte("early\n"))
	path := filepath.Join(t.TempDir(), "op.log")
	if err := d.open(path); err != nil {
		t.Fatal(err)
	}
	_, _ = d.Write([]byte("late\n"))
	if got := d.tail(1); got != "late" {
		t.Errorf("tail(1) = %q, want the last line", got)
	}
	if got := d.tail(5); got != "early\nlate" {
		t.Errorf("tail(5) = %q, want both lines", got)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := d.Write([]byte("after close\n")); n != len("after close\n") || err != nil {
		t.Errorf("a write after Close: %d, %v; want it dropped quietly", n, err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "early\nlate\n" {
		t.Errorf("log file %q, %v", got, err)
	}
}
